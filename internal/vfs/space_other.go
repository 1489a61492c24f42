//go:build !linux && !darwin && !freebsd && !windows

package vfs

import (
	"errors"
	"fmt"
)

func statDisk(path string) (DiskSpace, error) {
	return DiskSpace{}, fmt.Errorf("vfs: free space of %s: %w", path, errors.ErrUnsupported)
}
