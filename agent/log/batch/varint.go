package batch

import "encoding/binary"

// Kafka's record fields use zig-zag varints (protobuf sint32/sint64): a
// "varint" is an int32 in at most 5 bytes, a "varlong" an int64 in at most 10.
// The readers below are stricter than Kafka's in one way: they reject a
// fifth (or tenth) byte carrying bits beyond the type's width, which no
// correct encoder writes. They work on a position in place so that walking a
// batch allocates nothing.

// maxVarintLen32 and maxVarintLen64 are the longest encodings allowed.
const (
	maxVarintLen32 = 5
	maxVarintLen64 = 10
)

// readVarint decodes the zig-zag int32 at b[pos:], returning the value and
// the position after it. ok is false when b ends first or the varint is
// longer than 5 bytes or wider than 32 bits.
func readVarint(b []byte, pos int) (v int32, next int, ok bool) {
	var u uint32
	for i := 0; i < maxVarintLen32; i++ {
		if pos >= len(b) {
			return 0, pos, false
		}
		c := b[pos]
		pos++
		if i == maxVarintLen32-1 && c > 0x0f {
			return 0, pos, false
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), pos, true
		}
	}
	return 0, pos, false
}

// readVarlong decodes the zig-zag int64 at b[pos:]; see readVarint.
func readVarlong(b []byte, pos int) (v int64, next int, ok bool) {
	var u uint64
	for i := 0; i < maxVarintLen64; i++ {
		if pos >= len(b) {
			return 0, pos, false
		}
		c := b[pos]
		pos++
		if i == maxVarintLen64-1 && c > 0x01 {
			return 0, pos, false
		}
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int64(u>>1) ^ -int64(u&1), pos, true
		}
	}
	return 0, pos, false
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// appendVarint appends v zig-zag encoded. An int32 widened to int64 encodes
// to the same bytes as Kafka's 32-bit varint.
func appendVarint(dst []byte, v int64) []byte { return binary.AppendUvarint(dst, zigzag(v)) }

// varintSize is the encoded size of v.
func varintSize(v int64) int {
	u := zigzag(v)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
