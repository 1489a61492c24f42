//go:build linux || darwin || freebsd

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

func statDisk(path string) (DiskSpace, error) {
	var st unix.Statfs_t
	for {
		err := unix.Statfs(path, &st)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return DiskSpace{}, &os.PathError{Op: "statfs", Path: path, Err: err}
		}
	}
	unit := blockSize(&st)
	// Bavail is signed on some BSDs, and negative there once root has
	// eaten into its reserve.
	avail := uint64(max(int64(st.Bavail), 0))
	return DiskSpace{Total: uint64(st.Blocks) * unit, Free: avail * unit}, nil
}
