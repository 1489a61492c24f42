package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"

	"github.com/klauspost/compress/snappy"
)

// Kafka's Java client writes snappy in the framing of the xerial
// snappy-java library, not Google's framing format:
//
//	8 bytes  magic 0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//	4 bytes  version (big endian), 1
//	4 bytes  minimum compatible version, 1
//	then chunks, each:
//	4 bytes  length n of the chunk (big endian, signed)
//	n bytes  one raw snappy block
//
// Other clients (sarama, librdkafka when configured so, old franz-go) send
// a bare raw snappy block instead. We read both and write xerial, which
// every client reads.

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialHeaderSize is the magic plus the two version ints.
const xerialHeaderSize = 16

// xerialChunkSize is the uncompressed size of each chunk we write; 32 KiB is
// snappy-java's default block size.
const xerialChunkSize = 32 << 10

var errXerial = errors.New("malformed xerial snappy framing")

func unsnappy(dst, src []byte, maxSize int) ([]byte, error) {
	if len(src) >= xerialHeaderSize && bytes.HasPrefix(src, xerialMagic) {
		return unxerial(dst, src[xerialHeaderSize:], maxSize)
	}
	return unsnappyBlock(dst, src, maxSize)
}

// unsnappyBlock decodes one raw block, checking the length it claims in its
// preamble against the bound before allocating.
func unsnappyBlock(dst, src []byte, maxSize int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, undecodable(CodecSnappy, err)
	}
	if n > maxSize {
		return dst, overLimit(CodecSnappy, maxSize)
	}
	dst = slices.Grow(dst, n)
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], src)
	if err != nil {
		return dst, undecodable(CodecSnappy, err)
	}
	if len(out) != n { // Decode guarantees this; cheap to be sure
		return dst, undecodable(CodecSnappy, errXerial)
	}
	return dst[:len(dst)+n], nil
}

// unxerial decodes the chunks after the xerial header. A first pass sums the
// lengths the chunks claim, so that the bound is checked and dst grows once
// before any decoding.
func unxerial(dst, src []byte, maxSize int) ([]byte, error) {
	total := 0
	for rest := src; len(rest) > 0; {
		chunk, next, err := xerialChunk(rest)
		if err != nil {
			return dst, err
		}
		n, err := snappy.DecodedLen(chunk)
		if err != nil {
			return dst, undecodable(CodecSnappy, err)
		}
		if n > maxSize-total {
			return dst, overLimit(CodecSnappy, maxSize)
		}
		total += n
		rest = next
	}
	dst = slices.Grow(dst, total)
	for rest := src; len(rest) > 0; {
		chunk, next, _ := xerialChunk(rest) // checked above
		var err error
		if dst, err = unsnappyBlock(dst, chunk, maxSize); err != nil {
			return dst, err
		}
		rest = next
	}
	return dst, nil
}

// xerialChunk splits the first length-prefixed chunk off b.
func xerialChunk(b []byte) (chunk, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, undecodable(CodecSnappy, errXerial)
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n < 0 || int(n) > len(b)-4 {
		return nil, nil, undecodable(CodecSnappy, errXerial)
	}
	return b[4 : 4+n], b[4+n:], nil
}

// xerialAppend appends src in xerial framing.
func xerialAppend(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 1)
	for len(src) > 0 {
		n := min(len(src), xerialChunkSize)
		dst = slices.Grow(dst, 4+snappy.MaxEncodedLen(n))
		at := len(dst)
		// Encode straight into the spare capacity after the length slot.
		block := snappy.Encode(dst[at+4:cap(dst)], src[:n])
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(block)))
		dst = dst[:at+4+len(block)]
		src = src[n:]
	}
	return dst
}
