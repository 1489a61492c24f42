package vfs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

func tryLock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(h uintptr) {
		// One byte at offset 0 stands for the whole file: every locker
		// asks for the same byte.
		lerr = windows.LockFileEx(windows.Handle(h),
			windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	}); err != nil {
		return err
	}
	if lerr == nil {
		return nil
	}
	err = &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: lerr}
	if errors.Is(lerr, windows.ERROR_LOCK_VIOLATION) {
		return fmt.Errorf("%w: %w", ErrLocked, err)
	}
	return err
}
