//go:build !linux && !darwin

package vfs

import "os"

// syncFileData is the file's Sync: fdatasync is Linux's, and what Sync
// does elsewhere (fsync, FlushFileBuffers on Windows) is the durable call.
func syncFileData(f *os.File) error { return f.Sync() }

// openFSSyncer: only Linux has syncfs, so the caller syncs file by file.
func openFSSyncer(string) (FSSyncer, error) { return nil, nil }
