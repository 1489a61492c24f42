package batch

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// BuildOptions are the header fields of a batch that Build writes.
type BuildOptions struct {
	Codec                Codec
	BaseOffset           int64
	BaseTimestamp        int64
	ProducerID           int64 // -1: no producer (the zero value means producer id 0)
	ProducerEpoch        int16
	BaseSequence         int32
	PartitionLeaderEpoch int32
	// Attributes are extra attribute bits (AttrLogAppendTime,
	// AttrTransactional, AttrControl); any codec bits here are ignored.
	Attributes int16
}

// DefaultBuildOptions are the options of a plain, non-idempotent,
// uncompressed batch: no producer, epoch and sequence -1.
func DefaultBuildOptions() BuildOptions {
	return BuildOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1}
}

// Build encodes records as one batch. It writes the records exactly as given
// and checks nothing about them, so tests can also build bad batches: the
// caller sets OffsetDelta (0..n-1 for a valid batch) and TimestampDelta.
// lastOffsetDelta is the last record's OffsetDelta (0 for no records) and
// maxTimestamp is BaseTimestamp plus the largest TimestampDelta; for a
// LogAppendTime batch call SetLogAppendTime afterwards. The result is a
// new slice the caller owns.
func Build(b BuildOptions, records []Record) ([]byte, error) {
	if !b.Codec.Valid() {
		return nil, fmt.Errorf("%w: codec id %d", ErrUnsupportedCodec, b.Codec)
	}
	size := 0
	var lastDelta int32
	maxDelta := int64(0)
	for i := range records {
		r := &records[i]
		n := r.bodySize()
		size += varintSize(int64(n)) + n
		if i == 0 || r.TimestampDelta > maxDelta {
			maxDelta = r.TimestampDelta
		}
		lastDelta = r.OffsetDelta
	}
	var out []byte
	if b.Codec == CodecNone {
		out = make([]byte, HeaderSize, HeaderSize+size)
		for i := range records {
			out = AppendRecord(out, &records[i])
		}
	} else {
		section := make([]byte, 0, size)
		for i := range records {
			section = AppendRecord(section, &records[i])
		}
		var err error
		if out, err = compressAppend(make([]byte, HeaderSize, HeaderSize+size/2+64), b.Codec, section); err != nil {
			return nil, err
		}
	}
	if len(out)-lengthFieldEnd > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d bytes do not fit in a batch", ErrInvalidRecord, len(out))
	}
	maxTimestamp, _ := addTimestamp(b.BaseTimestamp, maxDelta)
	h := Header{
		BaseOffset:           b.BaseOffset,
		Length:               int32(len(out) - lengthFieldEnd),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch,
		Magic:                2,
		Attributes:           b.Attributes&^AttrCodecMask | int16(b.Codec),
		LastOffsetDelta:      lastDelta,
		BaseTimestamp:        b.BaseTimestamp,
		MaxTimestamp:         maxTimestamp,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		BaseSequence:         b.BaseSequence,
		RecordCount:          int32(len(records)),
	}
	putHeader(out, &h)
	return out, nil
}

// putHeader writes h into b[:HeaderSize] and sets the CRC over b, which
// must already hold the records.
func putHeader(b []byte, h *Header) {
	binary.BigEndian.PutUint64(b[0:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(h.Length))
	binary.BigEndian.PutUint32(b[12:], uint32(h.PartitionLeaderEpoch))
	b[16] = byte(h.Magic)
	binary.BigEndian.PutUint16(b[21:], uint16(h.Attributes))
	binary.BigEndian.PutUint32(b[23:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(b[27:], uint64(h.BaseTimestamp))
	binary.BigEndian.PutUint64(b[35:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(b[43:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(b[51:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(b[53:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(b[57:], uint32(h.RecordCount))
	binary.BigEndian.PutUint32(b[17:], Checksum(b))
}

// Recompress returns a new batch holding raw's records, byte for byte,
// compressed with c: every header field is kept except the codec bits,
// the length and the CRC. raw must be one whole batch with a valid CRC; its
// records are not validated (call Validate first). maxDecompressed bounds
// raw's decompressed records (<= 0 means DefaultMaxDecompressed). When raw
// already uses c, the result is a copy of raw.
func Recompress(raw []byte, c Codec, maxDecompressed int) ([]byte, error) {
	h, err := Check(raw)
	if err != nil {
		return nil, err
	}
	from := h.Codec()
	if !from.Valid() {
		return nil, fmt.Errorf("%w: codec id %d", ErrUnsupportedCodec, from)
	}
	if !c.Valid() {
		return nil, fmt.Errorf("%w: codec id %d", ErrUnsupportedCodec, c)
	}
	if from == c {
		return slices.Clone(raw), nil
	}
	section := raw[HeaderSize:]
	if from != CodecNone {
		bp := sectionBuffers.Get().(*[]byte)
		defer func() {
			if cap(*bp) <= poolRetainMax {
				sectionBuffers.Put(bp)
			}
		}()
		if *bp, err = decompressAppend((*bp)[:0], from, section, limitOrDefault(maxDecompressed)); err != nil {
			return nil, err
		}
		section = *bp
	}
	out := make([]byte, HeaderSize, HeaderSize+len(section)/2+64)
	copy(out, raw[:HeaderSize])
	if out, err = compressAppend(out, c, section); err != nil {
		return nil, err
	}
	if len(out)-lengthFieldEnd > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d bytes do not fit in a batch", ErrInvalidRecord, len(out))
	}
	h.Length = int32(len(out) - lengthFieldEnd)
	h.Attributes = h.Attributes&^AttrCodecMask | int16(c)
	putHeader(out, &h)
	return out, nil
}

// SetMaxTimestamp writes the header's maxTimestamp in place and recomputes
// the CRC. Kafka does this for CreateTime batches whose header disagrees
// with their records (see Info.MaxTimestamp).
func SetMaxTimestamp(b []byte, ts int64) {
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint32(b[17:], Checksum(b))
}

// BuildRetained rebuilds the batch h with only records, a subset of its
// own, as the log cleaner does: the records keep their offset and
// timestamp deltas, and the header keeps h's base offset, last offset
// delta, timestamps, producer id, epoch, base sequence, leader epoch,
// attributes and codec, so that offsets and idempotence state do not move
// (Kafka keeps the last offset delta of a cleaned v2 batch for the same
// reason). The result is a new slice the caller owns.
func BuildRetained(h *Header, records []Record) ([]byte, error) {
	out, err := Build(BuildOptions{
		Codec: h.Codec(), BaseOffset: h.BaseOffset, BaseTimestamp: h.BaseTimestamp,
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch, Attributes: h.Attributes,
	}, records)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(out[23:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(out[35:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint32(out[17:], Checksum(out))
	return out, nil
}
