//go:build unix

package objstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// flockFile opens (creating if needed) the lock file at path and takes an
// exclusive flock on it. The lock belongs to this open file description, so
// it excludes other processes and other opens in this process alike, and
// the kernel drops it if the process dies.
func flockFile(path string) (release func(), err error) {
	f, err := openRetrying(func() (*os.File, error) { return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644) })
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return func() {
		// Closing the file releases the flock.
		f.Close()
	}, nil
}
