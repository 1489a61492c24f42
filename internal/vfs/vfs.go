// Package vfs is the small filesystem interface that Strata's storage code
// uses for every file operation, so that tests can swap the operating system
// for a memory filesystem that can "crash" (MemFS.CrashClone) or a wrapper
// that fails chosen operations (Faulty).
//
// Contract:
//
//   - Default is the operating system. NewMem returns a memory filesystem;
//     NewFaulty wraps any FS and injects errors.
//   - Every FS and File here is safe for concurrent use. ReadAt and WriteAt
//     on one File may run concurrently (as with os.File); Write advances a
//     shared position and callers serialise it.
//   - Paths are slash-separated on every FS; the memory FS cleans them with
//     path.Clean and has no notion of a current directory beyond "/".
//   - Durability is what the OS gives: data is durable after File.Sync (or SyncData),
//     a new, renamed or removed name after SyncDir of its directory. MemFS
//     models data durability exactly and treats directory operations as
//     durable at once (see MemFS.CrashClone).
//   - Calls that differ by OS (SyncData, OpenFSSyncer, StatDisk, TryLock)
//     have one file per OS, named by suffix; where an OS lacks a call the
//     helper falls back (Sync for fdatasync, file-by-file syncs for
//     syncfs) or says errors.ErrUnsupported.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// File is an open file. Buffers passed in are not retained.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Reader
	io.Closer
	// Sync makes the file's data durable.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	// Name is the path the file was opened with.
	Name() string
}

// FS is a filesystem.
type FS interface {
	// OpenFile opens name with os.O_* flags (O_RDONLY, O_RDWR, O_WRONLY,
	// O_CREATE, O_EXCL, O_TRUNC, O_APPEND are honoured).
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Open opens name read-only.
	Open(name string) (File, error)
	// Create creates or truncates name for reading and writing.
	Create(name string) (File, error)
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir returns the names in dir, sorted.
	ReadDir(dir string) ([]string, error)
	Stat(name string) (os.FileInfo, error)
	Truncate(name string, size int64) error
	// SyncDir makes the entries of dir (creations, renames, removals) durable.
	SyncDir(dir string) error
}

// Default is the operating system's filesystem.
var Default FS = osFS{}

type osFS struct{}

var _ FS = osFS{}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error                    { return os.Remove(name) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }
func (osFS) Truncate(name string, size int64) error      { return os.Truncate(name, size) }

func (osFS) ReadDir(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	slices.Sort(names)
	return names, nil
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// WriteFileAtomic replaces name with data so that a crash leaves either the
// old or the new content: it writes name+".tmp", syncs it, renames it over
// name and syncs the directory.
func WriteFileAtomic(fs FS, dir, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	if err := fs.Rename(tmp, name); err != nil {
		_ = fs.Remove(tmp)
		return err
	}
	return fs.SyncDir(dir)
}

// ErrTooLarge is returned by ReadFile for a file above its size limit.
var ErrTooLarge = errors.New("vfs: file larger than limit")

// ReadFile reads a whole file of at most maxBytes bytes; a larger file is
// an error wrapping ErrTooLarge (files read this way come from disk and are
// not trusted to be small).
func ReadFile(fs FS, name string, maxBytes int64) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > maxBytes {
		return nil, fmt.Errorf("%w: %s above %d bytes", ErrTooLarge, name, maxBytes)
	}
	return b, nil
}

// SyncData makes f's data durable together with the metadata needed to
// read it back (size, block map), but not its times. On an OS file that is
// fdatasync on Linux, which spares the inode write an fsync adds to every
// append just for the new mtime; F_FULLFSYNC on darwin, whose fsync leaves
// the data in the drive's cache; and the file's Sync elsewhere. Other
// Files use their Sync, so that a fault-injecting FS sees the call.
func SyncData(f File) error {
	if of, ok := f.(*os.File); ok {
		return syncFileData(of)
	}
	return f.Sync()
}

// FSSyncer makes every file of one filesystem durable at once.
type FSSyncer interface {
	// SyncFS writes back every dirty file of the filesystem and waits for
	// it: syncfs(2). It reports a writeback error that happened anywhere
	// on the filesystem since its last call, without saying where.
	SyncFS() error
	Close() error
}

// OpenFSSyncer returns a syncer for the filesystem holding dir, or nil when
// there is no such call: fs is not the operating system's (a memory or
// fault-injecting FS), or the OS has no syncfs (only Linux has). Callers
// given nil sync file by file.
func OpenFSSyncer(fs FS, dir string) (FSSyncer, error) {
	if _, ok := fs.(osFS); !ok {
		return nil, nil
	}
	return openFSSyncer(dir)
}
