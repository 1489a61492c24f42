package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// The system calls behind SyncData and FSSyncer.SyncFS. They are variables
// only so that a test can see which call was made (sync_linux_test.go).
var (
	fdatasync = unix.Fdatasync
	syncfs    = unix.Syncfs
)

func syncFileData(f *os.File) error { return onFD(f, "fdatasync", fdatasync) }

func openFSSyncer(dir string) (FSSyncer, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return dirSyncer{d}, nil
}

// dirSyncer calls syncfs(2) on an open directory of the filesystem.
type dirSyncer struct{ d *os.File }

func (s dirSyncer) SyncFS() error { return onFD(s.d, "syncfs", syncfs) }

func (s dirSyncer) Close() error { return s.d.Close() }
