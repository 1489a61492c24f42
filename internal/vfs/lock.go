package vfs

import (
	"errors"
	"os"
)

// ErrLocked is returned by TryLock when another open file holds the lock.
var ErrLocked = errors.New("vfs: file is locked")

// TryLock takes an exclusive lock on f without waiting: flock on unix,
// LockFileEx on Windows. The lock belongs to this open file, so it
// excludes other processes and other opens in this process alike; closing
// f releases it, and so does the death of the process. A lock held
// elsewhere is an error wrapping ErrLocked. Where the OS has neither call
// the error wraps errors.ErrUnsupported.
func TryLock(f *os.File) error { return tryLock(f) }
