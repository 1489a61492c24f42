package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// errConflictingOptions is returned for PutOptions with both conditions set.
var errConflictingOptions = errors.New("objstore: PutOptions sets both IfAbsent and IfMatch")

func (o PutOptions) validate() error {
	if o.IfAbsent && o.IfMatch != "" {
		return errConflictingOptions
	}
	return nil
}

// check decides a conditional Put against the current state of the key. It
// is shared by the backends that evaluate conditions themselves (mem, fs) so
// they cannot drift apart.
func (o PutOptions) check(key string, exists bool, currentETag string) error {
	switch {
	case o.IfAbsent && exists:
		return fmt.Errorf("put %q if absent: key exists: %w", key, ErrPreconditionFailed)
	case o.IfMatch != "" && !exists:
		return fmt.Errorf("put %q if match %q: key missing: %w", key, o.IfMatch, ErrPreconditionFailed)
	case o.IfMatch != "" && currentETag != o.IfMatch:
		return fmt.Errorf("put %q if match %q: current etag is %q: %w", key, o.IfMatch, currentETag, ErrPreconditionFailed)
	}
	return nil
}

// clampRange turns GetRange's (offset, length) into [start, end) within an
// object of size bytes. The rules, shared by every backend:
//
//   - offset < 0 or offset > size: ErrInvalidRange.
//   - offset == size: an empty body (reading "the rest" of a fully read
//     object is not an error).
//   - length < 0: to the end.
//   - offset+length past the end: clamped to the end, as S3 returns what
//     exists rather than failing. Callers that need an exact length check
//     how many bytes they got.
func clampRange(key string, size, offset, length int64) (start, end int64, err error) {
	if offset < 0 || offset > size {
		return 0, 0, fmt.Errorf("range of %q at offset %d, size %d: %w", key, offset, size, ErrInvalidRange)
	}
	end = size
	if length >= 0 && length < size-offset {
		end = offset + length
	}
	return offset, end, nil
}

// checkSize rejects a negative PutReader size.
func checkSize(key string, size int64) error {
	if size < 0 {
		return fmt.Errorf("objstore: put %q: negative size %d", key, size)
	}
	return nil
}

// readAllAt reads the first size bytes of r into memory, for backends that
// hold objects in memory. The buffer grows as bytes arrive rather than
// being allocated from size up front, so a wrong size cannot allocate more
// than r really holds.
func readAllAt(r io.ReaderAt, size int64) ([]byte, error) {
	data, err := io.ReadAll(io.NewSectionReader(r, 0, size))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) < size {
		return nil, fmt.Errorf("read %d of %d bytes: %w", len(data), size, io.ErrUnexpectedEOF)
	}
	return data, nil
}

// ctxReader ends a long read (a streamed upload) once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
