package kafka

import (
	"errors"
	"fmt"
)

func strptr(s string) *string { return &s }

func errf(format string, args ...any) error { return errors.New(fmt.Sprintf(format, args...)) }
