package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// allocDuring returns the bytes allocated while f runs.
func allocDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Per codec, a bomb (64 MiB of zeros, a few KiB compressed) decoded under a
// 4 MiB bound: the decoder stops at the bound and allocates about the
// bound, never the 64 MiB. The streaming decoders (gzip, lz4) grow their
// output by doubling up to the bound, so they allocate up to twice it;
// zstd's decoder is built for the next power of two and checks the exact
// bound on its output, so it too may reach twice the bound.
func TestDecompressBombAllocations(t *testing.T) {
	const limit = 4 << 20
	src := make([]byte, 64<<20)
	// A streaming zstd writer (the Java client's) declares no content
	// size, so the decoder cannot refuse the frame from its header.
	var streamed bytes.Buffer
	zw, err := zstd.NewWriter(&streamed, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(src)
	zw.Close()
	var zh zstd.Header
	if err := zh.Decode(streamed.Bytes()); err != nil || zh.HasFCS {
		t.Fatalf("streamed zstd frame: %v, content size declared %v; want none", err, zh.HasFCS)
	}
	bombs := []struct {
		c   Codec
		enc []byte
	}{{CodecZstd, streamed.Bytes()}}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		enc, err := Compress(c, src)
		if err != nil {
			t.Fatal(err)
		}
		bombs = append(bombs, struct {
			c   Codec
			enc []byte
		}{c, enc})
	}
	for _, b := range bombs {
		c, enc := b.c, b.enc
		Decompress(c, enc, limit) // warm pools and the zstd decoder
		var out []byte
		n := allocDuring(func() { out, err = Decompress(c, enc, limit) })
		if !errors.Is(err, ErrDecompressLimit) || !errors.Is(err, ErrInvalidRecord) || out != nil {
			t.Fatalf("%v: %v, %d bytes out; want ErrDecompressLimit", c, err, len(out))
		}
		t.Logf("%v: %d compressed bytes claiming %d; allocated %d under a %d bound", c, len(enc), len(src), n, limit)
		slack := uint64(2*limit + limit/2)
		if raceEnabled {
			// sync.Pool drops items at random under the race detector, so
			// a decoder may be built afresh; still far under the 64 MiB
			// an unbounded decoder would produce.
			slack = 6 * limit
		}
		if n > slack {
			t.Errorf("%v: allocated %d bytes under a %d-byte bound", c, n, limit)
		}
	}
}

// snappyClaim is a raw snappy block whose preamble claims n decoded bytes
// but which holds one literal byte: it must be refused on the claim alone.
func snappyClaim(n int) []byte {
	b := binary.AppendUvarint(nil, uint64(n))
	return append(b, 0<<2, 'x') // a literal tag of length 1, then the byte
}

// Snappy's lengths are declared up front, in the block preamble and, with
// xerial framing, per chunk: a claim past the bound is refused before any
// output is allocated, whether one block claims it or the chunks add up
// to it.
func TestSnappyClaimsCheckedFirst(t *testing.T) {
	const limit = 4 << 20
	xerial := append([]byte(nil), xerialMagic...)
	xerial = binary.BigEndian.AppendUint32(xerial, 1)
	xerial = binary.BigEndian.AppendUint32(xerial, 1)
	for range 3 { // 3 × 2 MiB claimed > 4 MiB
		chunk := snappyClaim(2 << 20)
		xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(chunk)))
		xerial = append(xerial, chunk...)
	}
	for name, src := range map[string][]byte{"raw block": snappyClaim(1 << 30), "xerial chunks": xerial} {
		var err error
		n := allocDuring(func() { _, err = Decompress(CodecSnappy, src, limit) })
		if !errors.Is(err, ErrDecompressLimit) {
			t.Fatalf("%s: %v, want ErrDecompressLimit", name, err)
		}
		if n > 64<<10 {
			t.Errorf("%s: allocated %d bytes before refusing the claim", name, n)
		}
	}
}
