package objstore

import (
	"errors"
	"fmt"
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
