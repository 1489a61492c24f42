package batch

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

// Batches stored before Produce bounded decompression (issue 19) may hold a
// decompression bomb. The fetch path checks such a batch once with
// CheckDecompressedSize, which throws the output away as it goes, and
// serves one that fails in the form Emptied returns: what Kafka's log
// compaction leaves of a batch whose records are all gone.

// countChunk is the buffer a size check decodes into and overwrites.
const countChunk = 64 << 10

var countBuffers = sync.Pool{New: func() any { b := make([]byte, countChunk); return &b }}

// CheckDecompressedSize reports whether src, the records section of a batch
// compressed with c, decompresses to at most maxSize bytes (<= 0 means
// DefaultMaxDecompressed), holding only a codec's window and a 64 KiB
// buffer, whatever the output size: the bytes are counted and dropped.
// Past the bound the error wraps ErrInvalidRecord and ErrDecompressLimit;
// snappy, whose blocks state their length, and zstd frames that declare
// their size are judged on the claim, without decoding. Undecodable input
// wraps ErrInvalidRecord. Safe for concurrent use.
func CheckDecompressedSize(c Codec, src []byte, maxSize int) error {
	maxSize = limitOrDefault(maxSize)
	switch c {
	case CodecNone:
		if len(src) > maxSize {
			return overLimit(c, maxSize)
		}
		return nil
	case CodecGzip:
		gr := gzipReaders.Get().(*gzipReader)
		defer func() {
			gr.src.Reset(nil)
			gzipReaders.Put(gr)
		}()
		gr.src.Reset(src)
		if err := gr.r.Reset(&gr.src); err != nil {
			return undecodable(c, err)
		}
		return countBounded(&gr.r, c, maxSize)
	case CodecSnappy:
		return snappyClaimWithin(src, maxSize)
	case CodecLZ4:
		lr := lz4Readers.Get().(*lz4Reader)
		defer func() {
			lr.src.Reset(nil)
			lr.r.Reset(nil)
			lz4Readers.Put(lr)
		}()
		lr.src.Reset(src)
		lr.r.Reset(&lr.src)
		return countBounded(lr.r, c, maxSize)
	case CodecZstd:
		return zstdWithin(src, maxSize)
	}
	return ErrUnsupportedCodec
}

// countBounded reads r to its end through a scratch buffer, failing once
// more than maxSize bytes came out.
func countBounded(r io.Reader, c Codec, maxSize int) error {
	bp := countBuffers.Get().(*[]byte)
	defer countBuffers.Put(bp)
	total := 0
	for idle := 0; ; {
		n, err := r.Read(*bp)
		if total += n; total > maxSize {
			return overLimit(c, maxSize)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return undecodable(c, err)
		}
		if n == 0 {
			if idle++; idle > maxIdleReads {
				return undecodable(c, io.ErrNoProgress)
			}
		} else {
			idle = 0
		}
	}
}

// snappyClaimWithin sums the lengths a raw block or xerial chunks declare:
// snappy decodes to exactly that, or fails.
func snappyClaimWithin(src []byte, maxSize int) error {
	if len(src) < xerialHeaderSize || string(src[:len(xerialMagic)]) != string(xerialMagic) {
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return undecodable(CodecSnappy, err)
		}
		if n > maxSize {
			return overLimit(CodecSnappy, maxSize)
		}
		return nil
	}
	total := 0
	for rest := src[xerialHeaderSize:]; len(rest) > 0; {
		chunk, next, err := xerialChunk(rest)
		if err != nil {
			return err
		}
		n, err := snappy.DecodedLen(chunk)
		if err != nil {
			return undecodable(CodecSnappy, err)
		}
		if total += n; total > maxSize {
			return overLimit(CodecSnappy, maxSize)
		}
		rest = next
	}
	return nil
}

// zstdWithin judges a frame by its declared size when it has one, else
// streams it through the pooled decoders unzstd uses.
func zstdWithin(src []byte, maxSize int) error {
	var h zstd.Header
	if h.Decode(src) == nil && h.HasFCS && h.FrameContentSize > uint64(maxSize) {
		return overLimit(CodecZstd, maxSize)
	}
	pool := zstdReaderPool(max(maxSize, zstd.MinWindowSize))
	zr := pool.Get().(*zstdReader)
	if zr.err != nil {
		return undecodable(CodecZstd, zr.err)
	}
	defer func() {
		zr.src.Reset(nil)
		zr.d.Reset(nil)
		pool.Put(zr)
	}()
	zr.src.Reset(src)
	if err := zr.d.Reset(&zr.src); err != nil {
		return undecodable(CodecZstd, err)
	}
	err := countBounded(zr.d, CodecZstd, maxSize)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return overLimit(CodecZstd, maxSize)
	}
	return err
}

// Emptied returns a new batch that keeps raw's header (base offset, last
// offset delta, leader epoch, producer id, epoch and base sequence,
// timestamps, the transactional, control and timestamp-type bits) with no
// records and no codec, and its CRC recomputed: the empty batch Kafka's log
// compaction leaves (KAFKA-5443). Consumers move their position past its
// last offset and deliver nothing from it; franz-go and librdkafka both do.
func Emptied(raw []byte) ([]byte, error) {
	h, err := ParseHeader(raw)
	if err != nil {
		return nil, err
	}
	out := make([]byte, HeaderSize)
	copy(out, raw[:HeaderSize])
	binary.BigEndian.PutUint32(out[8:], HeaderSize-lengthFieldEnd)
	binary.BigEndian.PutUint16(out[21:], uint16(h.Attributes)&^AttrCodecMask)
	binary.BigEndian.PutUint32(out[57:], 0)
	binary.BigEndian.PutUint32(out[17:], Checksum(out))
	return out, nil
}
