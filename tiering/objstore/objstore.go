// Package objstore is Strata's view of an object store: a flat namespace of
// immutable-by-default objects with conditional writes.
//
// Everything above this package (tiering, cluster metadata) is written against
// Bucket. Backends: fs (the embedded default, a directory tree), mem (tests),
// and s3 (AWS S3, MinIO). Cross-cutting behaviour (key prefixes, metrics,
// fault injection) is added by wrapping a Bucket, never inside a backend.
//
// Conditional writes are what make the bucket usable as the source of truth
// for cluster metadata (docs/design.md §5 "CAS"):
//
//	PutOptions{IfAbsent: true}     create-once; fails with ErrPreconditionFailed if the key exists
//	PutOptions{IfMatch: etag}      replace only if the current ETag is etag
//	PutOptions{}                   unconditional overwrite
//
// All methods are safe for concurrent use. On the fs backend the conditions
// also hold across processes sharing one directory.
//
// Rules every backend shares (checked by the objstoretest suite):
//
//   - Keys follow ValidateKey; a bad key fails with ErrInvalidKey, on S3 too.
//   - GetRange(offset, length): offset < 0 or offset > size is
//     ErrInvalidRange; offset == size is an empty body; length < 0 reads to
//     the end; a length past the end is clamped to what exists, as S3 does,
//     so callers that need exact lengths count the bytes they read.
//   - ETags are opaque. mem and fs make a new one on every Put, even of
//     identical bytes; S3 derives it from the content, which is as safe for
//     CAS: a write that "wins" over an identical copy changes nothing the
//     caller did not read.
//
// Files: mem.go, fs*.go (the fs backend and its on-disk format), s3*.go
// (the S3 backend), open.go (the --store URL), prefix.go, faulty.go,
// metrics.go (decorators).
package objstore

import (
	"context"
	"errors"
	"io"
	"time"
)

var (
	// ErrNotFound is returned (wrapped) when a key does not exist.
	ErrNotFound = errors.New("objstore: object not found")
	// ErrPreconditionFailed is returned (wrapped) when a conditional Put loses:
	// IfAbsent and the key exists, or IfMatch and the ETag differs or the key
	// is missing. The caller re-reads and decides again.
	ErrPreconditionFailed = errors.New("objstore: precondition failed")
	// ErrInvalidRange is returned when GetRange asks for bytes past the end.
	ErrInvalidRange = errors.New("objstore: invalid range")
)

// IsNotFound reports whether err means the object does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsPreconditionFailed reports whether err is a lost conditional write.
func IsPreconditionFailed(err error) bool { return errors.Is(err, ErrPreconditionFailed) }

// PutOptions are the conditions of a Put. At most one of IfAbsent and
// IfMatch may be set.
type PutOptions struct {
	IfAbsent bool   // create only; If-None-Match: *
	IfMatch  string // replace only this version; If-Match: <etag>
}

// Attributes describe a stored object.
type Attributes struct {
	Size         int64
	ETag         string // opaque; changes whenever the content changes (see the package doc)
	LastModified time.Time
}

// Bucket is an object store. Keys are slash-separated relative paths without
// a leading slash, "." or ".." elements.
type Bucket interface {
	// Get returns the whole object and its ETag. The returned slice belongs
	// to the caller.
	Get(ctx context.Context, key string) (data []byte, attrs Attributes, err error)
	// GetRange returns length bytes starting at offset as a stream the caller
	// must close. length < 0 means "to the end".
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
	// Put writes the object atomically: readers see the old or the new
	// content, never a mix. It returns the new ETag. The data slice is not
	// retained after Put returns.
	Put(ctx context.Context, key string, data []byte, opts PutOptions) (etag string, err error)
	// PutReader is Put for objects too large to hold in memory (log
	// segments): it stores the first size bytes of r, atomically and under
	// the same conditions as Put, and returns the new ETag. r is read with
	// ReadAt, possibly more than once and from several goroutines at once
	// (a backend re-reads a part it retries), so its first size bytes must
	// not change until PutReader returns; an *os.File of a sealed segment
	// is the intended use. If r holds fewer than size bytes, PutReader
	// fails (wrapping io.ErrUnexpectedEOF) and stores nothing; an error
	// from r is returned wrapped. size < 0 is an error.
	PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (etag string, err error)
	// Delete removes the object. Deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Stat returns the object's attributes without its content.
	Stat(ctx context.Context, key string) (Attributes, error)
	// List calls fn for every key under prefix in lexical order, stopping at
	// the first error fn returns (which List then returns).
	List(ctx context.Context, prefix string, fn func(key string, attrs Attributes) error) error
	// Close releases the bucket's resources. It may be called twice.
	Close() error
}
