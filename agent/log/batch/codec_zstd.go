package batch

import (
	"errors"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstd encoders and decoders are costly to build (tables, history buffers)
// but their EncodeAll and DecodeAll are safe for concurrent use, so we keep
// a few for the life of the process and never close them; they start no
// goroutines when used only through those two methods.
//
// A decoder's memory bound is fixed when it is built, while callers pass
// their own bound per call. We keep one decoder per power-of-two bound
// (at most 64, in practice one or two, since bounds come from config) and
// check the exact bound on the result: a bomb can cost at most twice the
// caller's bound, plus one zstd block.

// zstdMaxWindow caps the window a frame may ask for, whatever the bound:
// Kafka producers use windows of a few MiB at most, and the window is
// memory the decoder must hold.
const zstdMaxWindow = 64 << 20

// zstdWindow is the window we compress with. Records sections rarely exceed
// a few MiB, and a small window keeps both our encoder and every consumer's
// decoder cheap.
const zstdWindow = 1 << 20

var (
	zstdDecoders sync.Map // uint (power-of-two bound) -> *zstd.Decoder
	zstdDecMu    sync.Mutex

	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
)

func zstdDecoder(maxSize int) (*zstd.Decoder, error) {
	bound := uint64(1) << bits.Len64(uint64(maxSize-1)) // next power of two >= maxSize
	if d, ok := zstdDecoders.Load(bound); ok {
		return d.(*zstd.Decoder), nil
	}
	// Serialise construction so that racing callers build one decoder.
	zstdDecMu.Lock()
	defer zstdDecMu.Unlock()
	if d, ok := zstdDecoders.Load(bound); ok {
		return d.(*zstd.Decoder), nil
	}
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0), // GOMAXPROCS concurrent DecodeAll calls
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(bound),
		zstd.WithDecoderMaxWindow(min(bound, zstdMaxWindow)),
	)
	if err != nil {
		return nil, err
	}
	zstdDecoders.Store(bound, d)
	return d, nil
}

func unzstd(dst, src []byte, maxSize int) ([]byte, error) {
	// The decoder cannot be built with a bound below MinWindowSize; the
	// exact check below still applies the caller's.
	d, err := zstdDecoder(max(maxSize, zstd.MinWindowSize))
	if err != nil {
		return dst, undecodable(CodecZstd, err)
	}
	start := len(dst)
	out, err := d.DecodeAll(src, dst)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return dst, overLimit(CodecZstd, maxSize)
	}
	if err != nil {
		return dst, undecodable(CodecZstd, err)
	}
	if len(out)-start > maxSize {
		return out[:start], overLimit(CodecZstd, maxSize)
	}
	return out, nil
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
