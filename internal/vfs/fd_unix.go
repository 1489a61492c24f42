//go:build unix

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// onFD runs call on f's descriptor, again while it is interrupted, and
// names f in its error.
func onFD(f *os.File, op string, call func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if cerr = call(int(fd)); cerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if cerr != nil {
		return &os.PathError{Op: op, Path: f.Name(), Err: cerr}
	}
	return nil
}
