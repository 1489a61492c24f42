// Package batch reads, checks and rewrites Kafka RecordBatch v2 (magic 2),
// the unit that Strata stores on disk and in the bucket unchanged.
//
// Layout of one batch (big endian; lengths in bytes):
//
//	offset  size  field
//	     0     8  baseOffset            set by the leader, outside the CRC
//	     8     4  batchLength           bytes after this field
//	    12     4  partitionLeaderEpoch  set by the leader, outside the CRC
//	    16     1  magic                 must be 2
//	    17     4  crc                   CRC-32C (Castagnoli) of bytes 21..end
//	    21     2  attributes            bits 0-2 codec, 3 timestamp type,
//	                                    4 transactional, 5 control
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61     …  records (compressed as a whole when codec != none)
//
// Functions here never panic on malformed input; they return errors that
// wrap one of the sentinels below (and those in errors.go).
//
// Beyond the header: record.go draws the layout of the records inside a
// batch; Validate checks a client's batch completely (Produce), Records
// decodes one, Recompress changes its codec, Build writes one, and the
// timestamp lookups serve ListOffsets. codec*.go hold the four codecs with
// the framings Kafka clients use. Everything here is stateless or guarded by
// sync.Pool / sync.Once, so every function is safe for concurrent use.
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of the fixed part of a v2 batch.
const HeaderSize = 61

// lengthFieldEnd is where batchLength's count starts: a batch occupies
// lengthFieldEnd + batchLength bytes.
const lengthFieldEnd = 12

// crcStart is the first byte covered by the CRC.
const crcStart = 21

var (
	// ErrCorrupt means the bytes are not a valid batch (length, CRC, counts).
	ErrCorrupt = errors.New("batch: corrupt record batch")
	// ErrShort means the buffer ends before the batch does (a torn tail).
	ErrShort = errors.New("batch: truncated record batch")
	// ErrMagic means the batch is not magic 2 (Kafka < 0.11 message sets).
	ErrMagic = errors.New("batch: unsupported magic")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Attribute bits.
const (
	AttrCodecMask     = 0x07
	AttrLogAppendTime = 0x08
	AttrTransactional = 0x10
	AttrControl       = 0x20
)

// Header is the decoded fixed part of a batch.
type Header struct {
	BaseOffset           int64
	Length               int32 // batchLength: total size is Length + 12
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the batch's total size in bytes.
func (h *Header) Size() int { return int(h.Length) + lengthFieldEnd }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h *Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the compression codec named in the attributes.
func (h *Header) Codec() Codec { return Codec(h.Attributes & AttrCodecMask) }

// IsControl reports a control batch (transaction markers).
func (h *Header) IsControl() bool { return h.Attributes&AttrControl != 0 }

// IsTransactional reports a transactional batch.
func (h *Header) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// HasProducer reports whether the batch was written by an idempotent producer.
func (h *Header) HasProducer() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record (wrapping
// at MaxInt32 as Kafka does).
func (h *Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	s := int64(h.BaseSequence) + int64(h.LastOffsetDelta)
	if s > 0x7fffffff {
		s -= 0x80000000
	}
	return int32(s)
}

// PeekSize returns the total size of the batch that starts at b, reading only
// the length field. It returns ErrShort when b holds fewer than 12 bytes and
// ErrCorrupt when the length is impossible.
func PeekSize(b []byte) (int, error) {
	if len(b) < lengthFieldEnd {
		return 0, ErrShort
	}
	n := int32(binary.BigEndian.Uint32(b[8:12]))
	if n < HeaderSize-lengthFieldEnd {
		return 0, fmt.Errorf("%w: batch length %d below header size", ErrCorrupt, n)
	}
	return int(n) + lengthFieldEnd, nil
}

// ParseHeader decodes the fixed header of the batch at the start of b without
// checking the CRC. b must hold at least HeaderSize bytes.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < HeaderSize {
		if len(b) >= 17 && b[16] != 2 {
			return h, fmt.Errorf("%w: magic %d", ErrMagic, int8(b[16]))
		}
		return h, ErrShort
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[0:]))
	h.Length = int32(binary.BigEndian.Uint32(b[8:]))
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[12:]))
	h.Magic = int8(b[16])
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: magic %d", ErrMagic, h.Magic)
	}
	h.CRC = binary.BigEndian.Uint32(b[17:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[21:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[23:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[27:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[35:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[43:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[51:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[53:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[57:]))
	if h.Length < HeaderSize-lengthFieldEnd {
		return h, fmt.Errorf("%w: batch length %d below header size", ErrCorrupt, h.Length)
	}
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 {
		return h, fmt.Errorf("%w: negative offset delta %d or record count %d", ErrCorrupt, h.LastOffsetDelta, h.RecordCount)
	}
	return h, nil
}

// Checksum computes the CRC-32C that a batch's header must carry.
func Checksum(b []byte) uint32 { return crc32.Checksum(b[crcStart:], castagnoli) }

// Check parses the header of the single batch b (len(b) must equal its size)
// and verifies its CRC.
func Check(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		if h.Size() > len(b) {
			return h, ErrShort
		}
		return h, fmt.Errorf("%w: batch length %d does not match %d bytes", ErrCorrupt, h.Size(), len(b))
	}
	if got := Checksum(b); got != h.CRC {
		return h, fmt.Errorf("%w: crc %08x, want %08x", ErrCorrupt, got, h.CRC)
	}
	return h, nil
}

// SetBaseOffset writes the base offset into a batch in place (outside the CRC).
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[0:], uint64(off)) }

// SetPartitionLeaderEpoch writes the leader epoch in place (outside the CRC).
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[12:], uint32(epoch))
}

// SetLogAppendTime marks the batch as LogAppendTime with maxTimestamp ts and
// recomputes the CRC, as Kafka does: the records keep their deltas.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[21:]) | AttrLogAppendTime
	binary.BigEndian.PutUint16(b[21:], attrs)
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint32(b[17:], Checksum(b))
}

// Split walks a buffer of concatenated batches, calling fn with each whole
// batch. It stops at the first batch that is short or corrupt and returns how
// many bytes were whole batches, with the error (nil at a clean end).
func Split(b []byte, fn func(h Header, raw []byte) error) (int, error) {
	pos := 0
	for pos < len(b) {
		size, err := PeekSize(b[pos:])
		if err != nil {
			return pos, err
		}
		if size > len(b)-pos {
			return pos, ErrShort
		}
		h, err := Check(b[pos : pos+size])
		if err != nil {
			return pos, err
		}
		if err := fn(h, b[pos:pos+size]); err != nil {
			return pos, err
		}
		pos += size
	}
	return pos, nil
}
