package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
)

func TestCodecRoundTrip(t *testing.T) {
	rng := newRand(t)
	sizes := []int{0, 1, 100, xerialChunkSize - 1, xerialChunkSize, xerialChunkSize + 1, 300 << 10}
	for _, c := range allCodecs {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%v/%d", c, n), func(t *testing.T) {
				src := make([]byte, n)
				for i := range src {
					src[i] = byte(rng.IntN(4)) // compressible
				}
				enc, err := Compress(c, src)
				if err != nil {
					t.Fatal(err)
				}
				dec, err := Decompress(c, enc, n+1)
				if err != nil {
					t.Fatalf("Decompress: %v", err)
				}
				if !bytes.Equal(dec, src) {
					t.Fatalf("round trip differs: %d bytes back, want %d", len(dec), n)
				}
				if n > 0 {
					// Exactly n is allowed; n-1 is not.
					if _, err := Decompress(c, enc, n); err != nil {
						t.Fatalf("at the bound: %v", err)
					}
					_, err := Decompress(c, enc, n-1)
					if n > 1 && (!errors.Is(err, ErrDecompressLimit) || !errors.Is(err, ErrInvalidRecord)) {
						t.Fatalf("below the bound: %v", err)
					}
				}
			})
		}
	}
}

func TestSnappyFormats(t *testing.T) {
	src := bytes.Repeat([]byte("strata snappy "), 10000) // several xerial chunks
	enc, _ := Compress(CodecSnappy, src)
	if !bytes.HasPrefix(enc, []byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")) {
		t.Fatalf("not xerial framed: % x", enc[:16])
	}
	// Walk the chunks independently of the decoder.
	chunks, total := 0, 0
	for rest := enc[16:]; len(rest) > 0; chunks++ {
		n := int(binary.BigEndian.Uint32(rest))
		block := rest[4 : 4+n]
		d, err := snappy.Decode(nil, block)
		if err != nil {
			t.Fatal(err)
		}
		total += len(d)
		rest = rest[4+n:]
	}
	if chunks != (len(src)+xerialChunkSize-1)/xerialChunkSize || total != len(src) {
		t.Fatalf("%d chunks with %d bytes", chunks, total)
	}
	// A raw block, as sarama sends.
	raw := snappy.Encode(nil, src)
	dec, err := Decompress(CodecSnappy, raw, len(src))
	if err != nil || !bytes.Equal(dec, src) {
		t.Fatalf("raw block: %v", err)
	}
	if _, err := Decompress(CodecSnappy, raw, len(src)-1); !errors.Is(err, ErrDecompressLimit) {
		t.Fatalf("raw block over limit: %v", err)
	}
}

func TestDecompressGarbage(t *testing.T) {
	garbage := [][]byte{
		{},
		{1, 2, 3},
		bytes.Repeat([]byte{0xff}, 64),
		append([]byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"), 0, 0, 0, 9, 1), // chunk past end
		append([]byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"), 0x80, 0, 0, 0), // negative chunk
		append([]byte("\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"), 0, 0),          // short length
	}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		for i, g := range garbage {
			out, err := Decompress(c, g, 1<<20)
			if c == CodecZstd && len(g) == 0 && err == nil && len(out) == 0 {
				continue // zstd treats no input as no frames
			}
			if c == CodecLZ4 && len(g) == 0 && err == nil && len(out) == 0 {
				continue // an empty lz4 stream reads as EOF
			}
			if !errors.Is(err, ErrInvalidRecord) {
				t.Errorf("%v garbage %d: %v (%d bytes)", c, i, err, len(out))
			}
		}
	}
	for _, c := range []Codec{5, 6, 7, -1} {
		if _, err := Decompress(c, []byte{1}, 10); !errors.Is(err, ErrUnsupportedCodec) {
			t.Errorf("codec %d: %v", c, err)
		}
		if _, err := Compress(c, []byte{1}); !errors.Is(err, ErrUnsupportedCodec) {
			t.Errorf("codec %d: %v", c, err)
		}
	}
}

// A bomb: 64 MiB of zeros compresses to very little. Decompressing with a
// 1 MiB bound must fail without producing (or holding) the 64 MiB.
func TestDecompressBomb(t *testing.T) {
	src := make([]byte, 64<<20)
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		enc, err := Compress(c, src)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		out, err := Decompress(c, enc, 1<<20)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrDecompressLimit) || out != nil {
			t.Fatalf("%v: %v, %d bytes", c, err, len(out))
		}
		// Allowed: the bound, growth slack, codec state; not 64 MiB.
		if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
			t.Fatalf("%v: allocated %d bytes for a 1 MiB bound", c, n)
		}
	}
}

// The shared zstd coder and the pools are used from many goroutines.
func TestCodecsConcurrent(t *testing.T) {
	rng := newRand(t)
	inputs := make([][]byte, 8)
	for i := range inputs {
		inputs[i] = randBytes(rng, 50000)
		if inputs[i] == nil {
			inputs[i] = []byte{}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(allCodecs)*len(inputs))
	for _, c := range allCodecs {
		for _, in := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					enc, err := Compress(c, in)
					if err != nil {
						errs <- err
						return
					}
					dec, err := Decompress(c, enc, len(in))
					if err != nil || !bytes.Equal(dec, in) {
						errs <- fmt.Errorf("%v: %v", c, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestParseCodec(t *testing.T) {
	for _, c := range allCodecs {
		if got, err := ParseCodec(c.String()); err != nil || got != c {
			t.Fatalf("%v: %v %v", c, got, err)
		}
	}
	if _, err := ParseCodec("brotli"); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatal(err)
	}
}
