package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
)

// FSBucket is a Bucket in a local directory tree: the embedded default.
//
// Key "a/b/c" is the file <root>/a/b/c, laid out as described in
// fsformat.go (a 64-byte header, then the object's bytes). Names starting
// with ReservedPrefix belong to the backend and are never objects:
//
//	<root>/.strata-locks/<stripe>     lock files for conditional writes
//	<root>/<dir>/.strata-tmp-<random> a Put in flight (or left by a crash)
//
// Put writes a temp file in the target's directory, fsyncs it, renames it
// over the target and fsyncs the directory, so a reader sees the old or the
// new object and an acknowledged Put survives power loss. Every mutation
// (Put of any kind, Delete) holds an exclusive flock on the key's lock
// stripe around check-then-rename, so IfAbsent and IfMatch hold across
// processes sharing the directory. Reads take no lock: rename is atomic.
//
// Limits of the file mapping: a key cannot be both an object and a
// "directory" of other keys ("a" and "a/b"); the second Put fails. Each key
// element must fit a file name (FSMaxNameBytes). Leftover temp files from a
// crashed writer are ignored but not removed.
type FSBucket struct {
	root   string // absolute and clean
	locks  *fsLocks
	closed atomic.Bool
}

var _ Bucket = (*FSBucket)(nil)

const (
	// FSMaxNameBytes is the longest key element the fs backend accepts:
	// NAME_MAX on Linux and macOS.
	FSMaxNameBytes = 255
	// fsMaxDirRetries bounds how often Put recreates a directory that a
	// concurrent Delete removed as empty between mkdir and create.
	fsMaxDirRetries = 16
	fsTempPattern   = ReservedPrefix + "tmp-*"
	fsLockDirName   = ReservedPrefix + "locks"
	fsDirMode       = 0o755
)

// NewFS opens (creating if needed) a bucket rooted at the directory root.
func NewFS(root string) (*FSBucket, error) {
	if root == "" {
		return nil, errors.New("fs: empty root directory")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("fs: root %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, fsDirMode); err != nil {
		return nil, fmt.Errorf("fs: create root: %w", err)
	}
	lockDir := filepath.Join(abs, fsLockDirName)
	if err := os.MkdirAll(lockDir, fsDirMode); err != nil {
		return nil, fmt.Errorf("fs: create lock directory: %w", err)
	}
	return &FSBucket{root: abs, locks: newFSLocks(lockDir)}, nil
}

// Root returns the absolute directory the bucket lives in.
func (b *FSBucket) Root() string { return b.root }

// path validates key and maps it to its file.
func (b *FSBucket) path(key string) (string, error) {
	if b.closed.Load() {
		return "", ErrClosed
	}
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	for elem := range strings.SplitSeq(key, "/") {
		if len(elem) > FSMaxNameBytes {
			return "", &KeyError{Key: key, Reason: fmt.Sprintf("element longer than %d bytes (a file name)", FSMaxNameBytes)}
		}
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// isMissing reports whether an OS error means "no such object": the file is
// absent, or a parent element is a file rather than a directory.
func isMissing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// openObject opens the object file and reads its header. The caller closes
// the file. A directory at the key's path is "not found": on S3 a key and a
// key prefix are different things.
func openObject(key, path string) (*os.File, fsHeader, Attributes, error) {
	f, err := openRetrying(func() (*os.File, error) { return os.Open(path) })
	if isMissing(err) {
		return nil, fsHeader{}, Attributes{}, fmt.Errorf("fs: %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fsHeader{}, Attributes{}, fmt.Errorf("fs: open %q: %w", key, err)
	}
	h, attrs, err := readHeader(key, path, f)
	if err != nil {
		f.Close()
		return nil, fsHeader{}, Attributes{}, err
	}
	return f, h, attrs, nil
}

func readHeader(key, path string, f *os.File) (fsHeader, Attributes, error) {
	fi, err := f.Stat()
	if err != nil {
		return fsHeader{}, Attributes{}, fmt.Errorf("fs: stat %q: %w", key, err)
	}
	if fi.IsDir() {
		return fsHeader{}, Attributes{}, fmt.Errorf("fs: %q is a key prefix, not an object: %w", key, ErrNotFound)
	}
	if !fi.Mode().IsRegular() {
		return fsHeader{}, Attributes{}, &CorruptObjectError{Key: key, Location: path, Reason: "not a regular file"}
	}
	buf := make([]byte, fsHeaderSize)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fsHeader{}, Attributes{}, fmt.Errorf("fs: read header of %q: %w", key, err)
	}
	h, reason := decodeFSHeader(buf[:n], fi.Size())
	if reason != "" {
		return fsHeader{}, Attributes{}, &CorruptObjectError{Key: key, Location: path, Reason: reason}
	}
	attrs := Attributes{Size: int64(h.length), ETag: h.etag(), LastModified: fi.ModTime()}
	return h, attrs, nil
}

// Get reads the whole object and verifies its checksum.
func (b *FSBucket) Get(ctx context.Context, key string) ([]byte, Attributes, error) {
	if err := ctx.Err(); err != nil {
		return nil, Attributes{}, err
	}
	path, err := b.path(key)
	if err != nil {
		return nil, Attributes{}, err
	}
	f, h, attrs, err := openObject(key, path)
	if err != nil {
		return nil, Attributes{}, err
	}
	defer f.Close()
	// The length was checked against the file size, so this allocation is
	// bounded by what is really on disk.
	data := make([]byte, h.length)
	if _, err := f.ReadAt(data, fsHeaderSize); err != nil && !(errors.Is(err, io.EOF) && len(data) == 0) {
		return nil, Attributes{}, fmt.Errorf("fs: read %q: %w", key, err)
	}
	if !h.matches(data) {
		return nil, Attributes{}, &CorruptObjectError{Key: key, Location: path, Reason: "content checksum mismatch"}
	}
	return data, attrs, nil
}

// GetRange streams part of the object; the range rules are in the package doc.
// The checksum covers the whole object, so a range read is not verified.
func (b *FSBucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	path, err := b.path(key)
	if err != nil {
		return nil, err
	}
	f, h, _, err := openObject(key, path)
	if err != nil {
		return nil, err
	}
	start, end, err := clampRange(key, int64(h.length), offset, length)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileRange{Reader: io.NewSectionReader(f, fsHeaderSize+start, end-start), f: f}, nil
}

// fileRange is a GetRange body: a section of the open file.
type fileRange struct {
	io.Reader
	f *os.File
}

func (r *fileRange) Close() error { return r.f.Close() }

// Stat reads only the header.
func (b *FSBucket) Stat(ctx context.Context, key string) (Attributes, error) {
	if err := ctx.Err(); err != nil {
		return Attributes{}, err
	}
	path, err := b.path(key)
	if err != nil {
		return Attributes{}, err
	}
	f, _, attrs, err := openObject(key, path)
	if err != nil {
		return Attributes{}, err
	}
	f.Close()
	return attrs, nil
}

// Close marks the bucket closed; later calls fail with ErrClosed. Calls in
// flight finish. A second Close is a no-op.
func (b *FSBucket) Close() error {
	b.closed.Store(true)
	return nil
}
