package batch

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidRecord means the batch's framing is intact but its records
	// are not: a count or offset delta that does not match, a varint that
	// runs past its record, compressed bytes that do not decode, more
	// decompressed bytes than allowed, or a control batch sent by a client.
	// Kafka answers these with INVALID_RECORD (87) or CORRUPT_MESSAGE (2).
	ErrInvalidRecord = errors.New("batch: invalid record")
	// ErrInvalidTimestamp means a record's timestamp lies outside the window
	// the caller allowed (Kafka's INVALID_TIMESTAMP, 32).
	ErrInvalidTimestamp = errors.New("batch: invalid timestamp")
	// ErrUnsupportedCodec means the attributes name codec 5, 6 or 7, which
	// Kafka does not define (UNSUPPORTED_COMPRESSION_TYPE, 76).
	ErrUnsupportedCodec = errors.New("batch: unsupported compression codec")
	// ErrDecompressLimit is wrapped together with ErrInvalidRecord when
	// records would decompress to more than the caller's bound, so that a
	// caller can tell a zip bomb (or a too-small limit) from garbage.
	ErrDecompressLimit = errors.New("batch: decompressed records exceed limit")
)

// RecordError locates a problem inside a batch's records. Err is
// ErrInvalidRecord or ErrInvalidTimestamp; errors.Is sees through to it.
type RecordError struct {
	Index  int    // 0-based record index in the batch
	Pos    int    // byte position in the (decompressed) records section
	Reason string // what was wrong, for people
	Err    error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%v: record %d at byte %d: %s", e.Err, e.Index, e.Pos, e.Reason)
}

func (e *RecordError) Unwrap() error { return e.Err }

func recordErr(index, pos int, reason string) error {
	return &RecordError{Index: index, Pos: pos, Reason: reason, Err: ErrInvalidRecord}
}
