package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback and awaitWriteback are sync_file_range(2): the first
// queues a range's dirty pages for writeback and returns, the second also
// waits until the range is on the device (not its metadata, nor the
// drive's cache: only the final fsync makes the file durable). Variables
// only so that a test can see the ranges (writebehind_test.go).
var (
	startWriteback = func(f *os.File, off, n int64) error {
		return onFD(f, "sync_file_range", func(fd int) error {
			return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
		})
	}
	awaitWriteback = func(f *os.File, off, n int64) error {
		return onFD(f, "sync_file_range", func(fd int) error {
			return unix.SyncFileRange(fd, off, n,
				unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		})
	}
)
