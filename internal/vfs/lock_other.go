//go:build !unix && !windows

package vfs

import (
	"errors"
	"fmt"
	"os"
)

func tryLock(f *os.File) error {
	return fmt.Errorf("vfs: lock %s: %w", f.Name(), errors.ErrUnsupported)
}
