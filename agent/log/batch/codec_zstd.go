package batch

import (
	"bytes"
	"errors"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstd encoders are costly to build (tables, history buffers) but
// EncodeAll is safe for concurrent use, so we keep one for the life of the
// process and never close it; it starts no goroutines when used only
// through EncodeAll.
//
// Decoding streams, as gzip and lz4 do, through readBounded: DecodeAll
// cannot be stopped at a bound it was not built with, and a frame that
// declares no content size (the Java client writes none) made it allocate
// several times the bound. A streaming decoder with concurrency 1 decodes
// synchronously and starts no goroutines, so decoders are pooled and never
// closed. A decoder's window bound is fixed when it is built, while callers
// pass their own bound per call, so there is one pool per power-of-two
// bound (at most 64, in practice one or two, since bounds come from
// config): a frame may ask for a window of at most twice the caller's
// bound (and zstdMaxWindow), and its output stops at the bound.

// zstdMaxWindow caps the window a frame may ask for, whatever the bound:
// Kafka producers use windows of a few MiB at most, and the window is
// memory the decoder must hold.
const zstdMaxWindow = 64 << 20

// zstdWindow is the window we compress with. Records sections rarely exceed
// a few MiB, and a small window keeps both our encoder and every consumer's
// decoder cheap.
const zstdWindow = 1 << 20

var (
	zstdReaders sync.Map // uint64 (power-of-two bound) -> *sync.Pool of *zstdReader

	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
)

type zstdReader struct {
	d   *zstd.Decoder
	src bytes.Reader
	err error // from building d
}

func zstdReaderPool(maxSize int) *sync.Pool {
	bound := uint64(1) << bits.Len64(uint64(maxSize-1)) // next power of two >= maxSize
	if p, ok := zstdReaders.Load(bound); ok {
		return p.(*sync.Pool)
	}
	p, _ := zstdReaders.LoadOrStore(bound, &sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1), // synchronous: no goroutines
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(bound),
			zstd.WithDecoderMaxWindow(min(bound, zstdMaxWindow)),
		)
		return &zstdReader{d: d, err: err}
	}})
	return p.(*sync.Pool)
}

func unzstd(dst, src []byte, maxSize int) ([]byte, error) {
	// A frame that declares its size (franz-go's do) is refused on the
	// claim, before any decoding.
	var h zstd.Header
	if h.Decode(src) == nil && h.HasFCS && h.FrameContentSize > uint64(maxSize) {
		return dst, overLimit(CodecZstd, maxSize)
	}
	// The decoder cannot be built with a bound below MinWindowSize; the
	// exact check in readBounded still applies the caller's.
	pool := zstdReaderPool(max(maxSize, zstd.MinWindowSize))
	zr := pool.Get().(*zstdReader)
	if zr.err != nil {
		return dst, undecodable(CodecZstd, zr.err)
	}
	defer func() {
		zr.src.Reset(nil)
		zr.d.Reset(nil) // drops the source; the decoder stays usable
		pool.Put(zr)
	}()
	zr.src.Reset(src)
	if err := zr.d.Reset(&zr.src); err != nil {
		return dst, undecodable(CodecZstd, err)
	}
	start := len(dst)
	dst, err := readBounded(dst, zr.d, CodecZstd, maxSize)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return dst[:start], overLimit(CodecZstd, maxSize)
	}
	return dst, err
}

func zstdEncoder() *zstd.Encoder {
	zstdEncOnce.Do(func() {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(0), // GOMAXPROCS concurrent EncodeAll calls
			zstd.WithWindowSize(zstdWindow),
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithZeroFrames(true), // an empty input still makes a valid frame
		)
		if err != nil { // only for invalid options, which are constants
			panic("batch: zstd encoder: " + err.Error())
		}
		zstdEnc = e
	})
	return zstdEnc
}

func zstdAppend(dst, src []byte) []byte { return zstdEncoder().EncodeAll(src, dst) }
