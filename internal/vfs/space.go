package vfs

// DiskSpace is the size of the filesystem holding a path and how much of
// it an unprivileged process may still write (root may have a reserve on
// top), in bytes.
type DiskSpace struct {
	Total, Free uint64
}

// StatDisk returns the DiskSpace of the filesystem holding path: statfs
// on Linux and darwin, GetDiskFreeSpaceEx on Windows. Elsewhere it
// returns an error wrapping errors.ErrUnsupported, and callers report the
// space as unknown.
func StatDisk(path string) (DiskSpace, error) { return statDisk(path) }
