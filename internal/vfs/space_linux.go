package vfs

import "golang.org/x/sys/unix"

// blockSize is the unit of Linux's block counts: the fragment size, which
// statfs(2) documents as the unit and which on most filesystems equals
// Bsize (the preferred I/O size) but not on all.
func blockSize(st *unix.Statfs_t) uint64 {
	if st.Frsize > 0 {
		return uint64(st.Frsize)
	}
	return uint64(st.Bsize)
}
