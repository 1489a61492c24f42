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
	return DiskSpace{Total: uint64(st.Blocks) * unit, Free: uint64(st.Bavail) * unit}, nil
}
