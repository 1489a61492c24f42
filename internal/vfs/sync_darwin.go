package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fullFsync asks the drive, not only the kernel, to make fd's data
// durable: fsync on macOS stops at the drive's volatile cache. Some
// filesystems (SMB mounts) refuse F_FULLFSYNC; fsync is the most they
// offer. A variable only so that a test can count its calls.
var fullFsync = func(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	if errors.Is(err, unix.ENOTSUP) {
		err = unix.Fsync(fd)
	}
	return err
}

// syncFileData is F_FULLFSYNC: darwin has no fdatasync that reaches the
// disk. (os.File.Sync does the same since Go 1.12; calling it here says
// so rather than relying on it.)
func syncFileData(f *os.File) error { return onFD(f, "fcntl F_FULLFSYNC", fullFsync) }

// openFSSyncer: darwin has no syncfs, so the caller syncs file by file.
func openFSSyncer(string) (FSSyncer, error) { return nil, nil }
