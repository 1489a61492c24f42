//go:build !linux

package vfs

import "os"

// Only Linux has sync_file_range; elsewhere the final fsync writes the
// whole file back, as before WriteBehind.
var (
	startWriteback = func(*os.File, int64, int64) error { return nil }
	awaitWriteback = func(*os.File, int64, int64) error { return nil }
)
