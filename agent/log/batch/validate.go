package batch

import (
	"fmt"
	"math"
)

// NoTimestamp is the timestamp Kafka clients older than 0.10 send (-1). As in
// Kafka, records carrying it are exempt from the timestamp window.
const NoTimestamp = -1

// ValidateOptions bound what Validate accepts.
type ValidateOptions struct {
	// MaxDecompressed bounds the decompressed records section in bytes
	// (<= 0 means DefaultMaxDecompressed).
	MaxDecompressed int
	// MinTimestamp and MaxTimestamp are the inclusive window for each
	// record's CreateTime (baseTimestamp + timestampDelta), checked only when
	// CheckTimestamps is set. Use math.MinInt64 / math.MaxInt64 for an open
	// side. Kafka's message.timestamp.before.max.ms and after.max.ms map to
	// now-before and now+after.
	MinTimestamp, MaxTimestamp int64
	CheckTimestamps            bool
	// RequireKeys refuses a record without a key (ErrInvalidRecord), as
	// Kafka does on a compacted topic.
	RequireKeys bool
}

// Info is what Inspect learns about a valid batch beyond its header.
type Info struct {
	Header
	// MaxTimestamp is the largest record timestamp, or the header's
	// MaxTimestamp for a LogAppendTime batch. Kafka trusts this rather than
	// the header's field when it indexes a CreateTime batch.
	MaxTimestamp int64
	// MaxTimestampDelta is the offset delta of the first record with
	// MaxTimestamp.
	MaxTimestampDelta int32
	// RecordsSize is the size of the records section after decompression.
	RecordsSize int
}

// Validate checks a batch sent by a client, raw being exactly one batch:
//
//   - framing and CRC, as Check (errors wrap ErrShort, ErrCorrupt, ErrMagic);
//   - a codec Kafka defines (ErrUnsupportedCodec);
//   - not a control batch, and at least one record; RecordCount records
//     present and nothing after them; offset deltas exactly 0..n-1 with
//     LastOffsetDelta n-1; every record's varints and lengths within the
//     record; a producer id with a sequence and, when transactional, a
//     producer id at all (ErrInvalidRecord); with RequireKeys, a key on
//     every record (ErrInvalidRecord);
//   - each record's timestamp in the window when asked (ErrInvalidTimestamp).
//
// Record-level errors are *RecordError. For an uncompressed batch Validate
// allocates nothing; a compressed one is decompressed into a pooled buffer.
// Safe for concurrent use.
func Validate(raw []byte, opts ValidateOptions) (Header, error) {
	info, err := Inspect(raw, opts)
	return info.Header, err
}

// Inspect is Validate that also reports the batch's true maximum timestamp
// and the decompressed size, which the log needs for its time index.
func Inspect(raw []byte, opts ValidateOptions) (Info, error) {
	var info Info
	if len(raw) >= HeaderSize {
		// Reject the cheap cases before paying for a CRC or a decompression.
		h, err := ParseHeader(raw)
		if err != nil {
			return Info{Header: h}, err
		}
		if err := checkHeaderFields(&h); err != nil {
			return Info{Header: h}, err
		}
	}
	var ob openBatch
	defer ob.release()
	err := ob.open(raw, opts.MaxDecompressed, false)
	info.Header = ob.header
	if err != nil {
		return info, err
	}
	h := &ob.header
	logAppend := h.Attributes&AttrLogAppendTime != 0
	info.MaxTimestamp = math.MinInt64
	rr := ob.reader()
	var rec Record
	for i := 0; i < int(h.RecordCount); i++ {
		start := rr.pos
		if err := rr.next(&rec, false); err != nil {
			return info, err
		}
		if rec.OffsetDelta != int32(i) {
			return info, recordErr(i, start, fmt.Sprintf("offset delta %d, want %d", rec.OffsetDelta, i))
		}
		if opts.RequireKeys && rec.Key == nil {
			return info, recordErr(i, start, "compacted topic cannot accept a record without a key")
		}
		ts, ok := addTimestamp(h.BaseTimestamp, rec.TimestampDelta)
		if opts.CheckTimestamps &&
			(!ok || (ts != NoTimestamp && (ts < opts.MinTimestamp || ts > opts.MaxTimestamp))) {
			return info, &RecordError{Index: i, Pos: start, Err: ErrInvalidTimestamp,
				Reason: fmt.Sprintf("timestamp %d outside [%d, %d]", ts, opts.MinTimestamp, opts.MaxTimestamp)}
		}
		if ts > info.MaxTimestamp {
			info.MaxTimestamp, info.MaxTimestampDelta = ts, rec.OffsetDelta
		}
	}
	if err := ob.finish(&rr); err != nil {
		return info, err
	}
	if logAppend {
		info.MaxTimestamp, info.MaxTimestampDelta = h.MaxTimestamp, 0
	}
	info.RecordsSize = len(ob.records)
	return info, nil
}

// checkHeaderFields checks what Validate requires of the header beyond
// ParseHeader's framing.
func checkHeaderFields(h *Header) error {
	switch {
	case !h.Codec().Valid():
		return fmt.Errorf("%w: codec id %d", ErrUnsupportedCodec, h.Codec())
	case h.IsControl():
		return fmt.Errorf("%w: control batch from a client", ErrInvalidRecord)
	case h.RecordCount < 1:
		return fmt.Errorf("%w: batch has no records", ErrInvalidRecord)
	case h.LastOffsetDelta != h.RecordCount-1:
		return fmt.Errorf("%w: last offset delta %d with %d records", ErrInvalidRecord, h.LastOffsetDelta, h.RecordCount)
	case h.HasProducer() && h.BaseSequence < 0:
		return fmt.Errorf("%w: producer id %d with sequence %d", ErrInvalidRecord, h.ProducerID, h.BaseSequence)
	case h.IsTransactional() && !h.HasProducer():
		return fmt.Errorf("%w: transactional batch without a producer id", ErrInvalidRecord)
	}
	return nil
}

// addTimestamp adds a record's delta to the base timestamp. On overflow,
// which no honest client produces, it saturates and reports !ok.
func addTimestamp(base, delta int64) (int64, bool) {
	s := base + delta
	switch {
	case delta > 0 && s < base:
		return math.MaxInt64, false
	case delta < 0 && s > base:
		return math.MinInt64, false
	}
	return s, true
}
