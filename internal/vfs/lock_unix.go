//go:build unix

package vfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func tryLock(f *os.File) error {
	err := onFD(f, "flock", func(fd int) error { return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) })
	if errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return err
}
