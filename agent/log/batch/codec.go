package batch

import "fmt"

// Codec is a Kafka compression codec id (attributes bits 0-2).
type Codec int8

const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

// DefaultMaxDecompressed is the decompressed-size bound used when a caller
// passes a bound <= 0. Kafka's default message.max.bytes is 1 MiB of
// compressed bytes; 64 MiB leaves room for very compressible data while
// keeping a hostile batch from taking much memory.
const DefaultMaxDecompressed = 64 << 20

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "unknown"
}

// Valid reports whether c is one of the five codecs Kafka defines.
func (c Codec) Valid() bool { return c >= CodecNone && c <= CodecZstd }

// ParseCodec maps a Kafka compression.type name ("none", "gzip", "snappy",
// "lz4", "zstd") to its codec. ("producer" is a topic setting, not a codec,
// and is the caller's business.)
func ParseCodec(name string) (Codec, error) {
	for c := CodecNone; c <= CodecZstd; c++ {
		if c.String() == name {
			return c, nil
		}
	}
	return 0, fmt.Errorf("%w: %q", ErrUnsupportedCodec, name)
}

func limitOrDefault(maxSize int) int {
	if maxSize <= 0 {
		return DefaultMaxDecompressed
	}
	return maxSize
}

// Decompress decodes src, the records section of a batch compressed with c,
// into a new slice that the caller owns. maxSize bounds the output (<= 0
// means DefaultMaxDecompressed); past it, the error wraps ErrInvalidRecord
// and ErrDecompressLimit, and at most about twice maxSize bytes were
// allocated (the output grows by doubling; lengths that snappy and zstd
// declare up front are checked before any). The decoders stop as soon as
// their output passes maxSize.
// CodecNone returns a copy of src, under the same bound. Undecodable input
// wraps ErrInvalidRecord; codecs 5-7 give ErrUnsupportedCodec.
// Safe for concurrent use.
func Decompress(c Codec, src []byte, maxSize int) ([]byte, error) {
	out, err := decompressAppend(nil, c, src, limitOrDefault(maxSize))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Compress encodes src with c into a new slice that the caller owns, in the
// framing every Kafka client reads: a gzip stream, xerial-framed snappy, an
// LZ4 frame, a zstd frame. CodecNone returns a copy. Safe for concurrent use.
func Compress(c Codec, src []byte) ([]byte, error) {
	return compressAppend(nil, c, src)
}

// decompressAppend appends the decoding of src to dst, writing at most
// maxSize new bytes. It is the pooled-buffer form behind Decompress.
func decompressAppend(dst []byte, c Codec, src []byte, maxSize int) ([]byte, error) {
	var err error
	switch c {
	case CodecNone:
		if len(src) > maxSize {
			return dst, overLimit(c, maxSize)
		}
		return append(dst, src...), nil
	case CodecGzip:
		dst, err = gunzip(dst, src, maxSize)
	case CodecSnappy:
		dst, err = unsnappy(dst, src, maxSize)
	case CodecLZ4:
		dst, err = unlz4(dst, src, maxSize)
	case CodecZstd:
		dst, err = unzstd(dst, src, maxSize)
	default:
		return dst, fmt.Errorf("%w: codec id %d", ErrUnsupportedCodec, c)
	}
	return dst, err
}

// compressAppend appends the encoding of src to dst.
func compressAppend(dst []byte, c Codec, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return gzipAppend(dst, src)
	case CodecSnappy:
		return xerialAppend(dst, src), nil
	case CodecLZ4:
		return lz4Append(dst, src)
	case CodecZstd:
		return zstdAppend(dst, src), nil
	}
	return dst, fmt.Errorf("%w: codec id %d", ErrUnsupportedCodec, c)
}

func overLimit(c Codec, maxSize int) error {
	return fmt.Errorf("%w: %w: %s records over %d bytes", ErrInvalidRecord, ErrDecompressLimit, c, maxSize)
}

func undecodable(c Codec, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrInvalidRecord, c, err)
}
