package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/strata-streaming/strata/internal/vfs"
)

// Put writes the object durably and atomically; see FSBucket for the
// protocol.
func (b *FSBucket) Put(ctx context.Context, key string, data []byte, opts PutOptions) (string, error) {
	return b.put(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

// PutReader streams the object into the temp file, so its size is bounded
// by the disk, not by memory; otherwise it is Put.
func (b *FSBucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	return b.put(ctx, key, r, size, opts)
}

// put is Put and PutReader. The temp file is written and fsynced before the
// lock is taken, so the lock is held only for the check, the rename and the
// directory fsync, however large the object.
func (b *FSBucket) put(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	path, err := b.path(key)
	if err != nil {
		return "", err
	}
	if err := opts.validate(); err != nil {
		return "", err
	}
	if err := checkSize(key, size); err != nil {
		return "", err
	}
	dir := filepath.Dir(path)
	tmp, err := b.createTemp(key, dir)
	if err != nil {
		return "", err
	}
	renamed := false
	defer func() {
		if !renamed {
			// Best effort: a leftover temp file is harmless (List and Get
			// never see it), only wasted space.
			_ = os.Remove(tmp.Name())
		}
	}()
	h, err := writeTemp(ctx, tmp, r, size)
	if err != nil {
		return "", fmt.Errorf("fs: write %q: %w", key, err)
	}

	unlock, err := b.locks.lock(ctx, key)
	if err != nil {
		return "", fmt.Errorf("fs: lock %q: %w", key, err)
	}
	defer unlock()
	if opts.IfAbsent || opts.IfMatch != "" {
		exists, etag, err := currentETag(key, path)
		if err != nil {
			return "", err
		}
		if err := opts.check(key, exists, etag); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		if fi, statErr := os.Stat(path); statErr == nil && fi.IsDir() {
			return "", fmt.Errorf("fs: put %q: the key is already a prefix of other keys: %w", key, err)
		}
		return "", fmt.Errorf("fs: put %q: %w", key, err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return "", fmt.Errorf("fs: put %q: %w", key, err)
	}
	return h.etag(), nil
}

// currentETag reads the ETag of the object at path for a conditional Put.
// The caller holds the key's lock.
func currentETag(key, path string) (exists bool, etag string, err error) {
	f, _, attrs, err := openObject(key, path)
	if IsNotFound(err) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	f.Close()
	return true, attrs.ETag, nil
}

// createTemp makes the key's directory and a temp file in it. A concurrent
// Delete may remove a directory once it looks empty, between our mkdir of it
// and our mkdir or create inside it; then we start again, a bounded number
// of times. Once the temp file exists its directory is not empty, so the
// rename cannot meet a missing directory.
func (b *FSBucket) createTemp(key, dir string) (*os.File, error) {
	for range fsMaxDirRetries {
		err := b.mkdirDurable(key, dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a parent was pruned while we descended
		}
		if err != nil {
			return nil, err
		}
		tmp, err := openRetrying(func() (*os.File, error) { return os.CreateTemp(dir, fsTempPattern) })
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("fs: put %q: create temp file: %w", key, err)
		}
		return tmp, nil
	}
	return nil, fmt.Errorf("fs: put %q: directory %s kept disappearing (%d attempts)", key, dir, fsMaxDirRetries)
}

// mkdirDurable creates dir and any missing parents below the root, fsyncing
// each parent after creating a child in it, so the new object's path
// survives power loss along with the object.
func (b *FSBucket) mkdirDurable(key, dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	rel, err := filepath.Rel(b.root, dir)
	if err != nil {
		return fmt.Errorf("fs: put %q: %w", key, err)
	}
	if rel == "." {
		return nil // the root itself; NewFS made it
	}
	parent := b.root
	for elem := range strings.SplitSeq(filepath.ToSlash(rel), "/") {
		next := filepath.Join(parent, elem)
		err := os.Mkdir(next, fsDirMode)
		switch {
		case err == nil:
			if err := syncDir(parent); err != nil {
				return fmt.Errorf("fs: put %q: %w", key, err)
			}
		case errors.Is(err, fs.ErrExist):
			fi, statErr := os.Stat(next)
			if statErr == nil && !fi.IsDir() {
				return fmt.Errorf("fs: put %q: %s is an object, so it cannot also be a key prefix", key, next)
			}
		case errors.Is(err, syscall.ENOTDIR):
			return fmt.Errorf("fs: put %q: a parent of %s is an object, so it cannot also be a key prefix", key, next)
		default:
			return fmt.Errorf("fs: put %q: %w", key, err)
		}
		parent = next
	}
	return nil
}

// fsCopyBufferBytes bounds the buffer writeTemp copies through: large
// enough that a 1 GiB segment takes about a thousand writes, and no larger
// than the object, so small metadata objects allocate little.
const fsCopyBufferBytes = 1 << 20

// fsWriteBehindBytes is the window of vfs.WriteBehind for object files:
// a 1 GiB segment's copy then keeps at most about 16 MiB dirty, and the
// fsyncs of the logs beside it on the same disk never wait behind more.
const fsWriteBehindBytes = 8 << 20

// writeTemp writes the object file: the content (the first size bytes of r)
// after room for the header, then the header, whose checksum is only known
// once the content has been read. It fsyncs and closes f either way. A long
// copy stops when ctx is done.
func writeTemp(ctx context.Context, f *os.File, r io.ReaderAt, size int64) (fsHeader, error) {
	h, err := func() (fsHeader, error) {
		sum := newFSChecksum()
		if size > 0 {
			if _, err := f.Seek(fsHeaderSize, io.SeekStart); err != nil {
				return fsHeader{}, err
			}
			buf := make([]byte, min(size, fsCopyBufferBytes))
			src := &ctxReader{ctx: ctx, r: io.NewSectionReader(r, 0, size)}
			wb := vfs.NewWriteBehind(f, fsHeaderSize, fsWriteBehindBytes)
			n, err := io.CopyBuffer(io.MultiWriter(f, sum, wb), src, buf)
			if err != nil {
				return fsHeader{}, err
			}
			if n < size {
				return fsHeader{}, fmt.Errorf("read %d of %d bytes: %w", n, size, io.ErrUnexpectedEOF)
			}
		}
		h, err := newFSHeader(size, sum.Sum(nil))
		if err != nil {
			return fsHeader{}, err
		}
		if _, err := f.WriteAt(h.encode(), 0); err != nil {
			return fsHeader{}, err
		}
		return h, f.Sync()
	}()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return h, err
}

// syncDir fsyncs a directory so a rename, create or remove in it is durable.
func syncDir(dir string) error {
	d, err := openRetrying(func() (*os.File, error) { return os.Open(dir) })
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	if closeErr := d.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Delete removes the object under the key's lock (so it cannot interleave
// with a conditional Put's check and rename), then removes directories it
// left empty, up to but not including the root.
func (b *FSBucket) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := b.path(key)
	if err != nil {
		return err
	}
	unlock, err := b.locks.lock(ctx, key)
	if err != nil {
		return fmt.Errorf("fs: lock %q: %w", key, err)
	}
	fi, err := os.Lstat(path)
	if isMissing(err) || (err == nil && fi.IsDir()) {
		unlock()
		return nil
	}
	if err == nil {
		err = os.Remove(path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	unlock()
	if err != nil && !isMissing(err) {
		return fmt.Errorf("fs: delete %q: %w", key, err)
	}
	b.pruneEmptyDirs(filepath.Dir(path))
	return nil
}

// pruneEmptyDirs removes dir and its parents while they are empty. Failure
// is expected (the directory has other entries) and ends the walk; a Put
// racing with this recreates what it needs (see createTemp).
func (b *FSBucket) pruneEmptyDirs(dir string) {
	for dir != b.root && len(dir) > len(b.root) {
		if err := os.Remove(dir); err != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}
