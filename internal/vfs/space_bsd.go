//go:build darwin || freebsd

package vfs

import "golang.org/x/sys/unix"

// blockSize is the unit of the BSDs' block counts, the fundamental block
// size.
func blockSize(st *unix.Statfs_t) uint64 { return uint64(st.Bsize) }
