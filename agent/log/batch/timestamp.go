package batch

import "math"

// Timestamp lookups serve ListOffsets and the log's time index. Record
// timestamps are baseTimestamp + timestampDelta, except in a LogAppendTime
// batch, where the broker stamped the whole batch and every record's
// timestamp is the header's maxTimestamp (the deltas are the client's and
// are ignored, as in Kafka).
//
// Neither function trusts the header's maxTimestamp of a CreateTime batch
// to skip it: a client may have sent a wrong one. Both check the CRC and
// accept control batches; neither allocates for an uncompressed batch.

// OffsetAtTimestamp finds the first record of raw (one whole batch) whose
// timestamp is >= ts and returns its offset and timestamp; ok is false when
// there is none. maxDecompressed bounds the decompressed records (<= 0
// means DefaultMaxDecompressed).
func OffsetAtTimestamp(raw []byte, ts int64, maxDecompressed int) (offset, timestamp int64, ok bool, err error) {
	var ob openBatch
	defer ob.release()
	if err := ob.open(raw, maxDecompressed, false); err != nil {
		return -1, NoTimestamp, false, err
	}
	h := &ob.header
	rr := ob.reader()
	var rec Record
	for range h.RecordCount {
		if err := rr.next(&rec, false); err != nil {
			return -1, NoTimestamp, false, err
		}
		if t := recordTimestamp(h, &rec); t >= ts {
			return h.BaseOffset + int64(rec.OffsetDelta), t, true, nil
		}
		if h.Attributes&AttrLogAppendTime != 0 {
			break // every record has the first one's timestamp
		}
	}
	return -1, NoTimestamp, false, nil
}

// MaxTimestampOffset returns the offset and timestamp of the first record of
// raw with the largest timestamp (for a LogAppendTime batch, its first
// record). A batch with no records gives -1, NoTimestamp.
func MaxTimestampOffset(raw []byte, maxDecompressed int) (offset, timestamp int64, err error) {
	var ob openBatch
	defer ob.release()
	if err := ob.open(raw, maxDecompressed, false); err != nil {
		return -1, NoTimestamp, err
	}
	h := &ob.header
	offset, timestamp = -1, math.MinInt64
	rr := ob.reader()
	var rec Record
	for i := range h.RecordCount {
		if err := rr.next(&rec, false); err != nil {
			return -1, NoTimestamp, err
		}
		if t := recordTimestamp(h, &rec); i == 0 || t > timestamp {
			offset, timestamp = h.BaseOffset+int64(rec.OffsetDelta), t
		}
		if h.Attributes&AttrLogAppendTime != 0 {
			break
		}
	}
	if h.RecordCount == 0 {
		return -1, NoTimestamp, nil
	}
	return offset, timestamp, nil
}

func recordTimestamp(h *Header, rec *Record) int64 {
	if h.Attributes&AttrLogAppendTime != 0 {
		return h.MaxTimestamp
	}
	ts, _ := addTimestamp(h.BaseTimestamp, rec.TimestampDelta)
	return ts
}
