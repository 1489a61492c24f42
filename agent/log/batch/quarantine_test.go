package batch

import (
	"bytes"
	"errors"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A bomb (64 MiB of zeros) checked under a 4 MiB bound is refused while
// holding far less than the bound, since the output is counted and
// dropped; a batch within the bound passes. The streamed zstd frame
// declares no size, so it is decoded, not judged on a claim.
func TestCheckDecompressedSize(t *testing.T) {
	const limit = 4 << 20
	bomb := make([]byte, 64<<20)
	var streamed bytes.Buffer
	zw, err := zstd.NewWriter(&streamed, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(bomb)
	zw.Close()
	cases := []struct {
		name string
		c    Codec
		enc  []byte
	}{{"zstd streamed", CodecZstd, streamed.Bytes()}}
	for _, c := range []Codec{CodecGzip, CodecSnappy, CodecLZ4, CodecZstd} {
		enc, err := Compress(c, bomb)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			c    Codec
			enc  []byte
		}{c.String(), c, enc})
	}
	for _, tc := range cases {
		CheckDecompressedSize(tc.c, tc.enc, limit) // warm the pools
		var err error
		n := allocDuring(func() { err = CheckDecompressedSize(tc.c, tc.enc, limit) })
		if !errors.Is(err, ErrDecompressLimit) || !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("%s: %v, want ErrDecompressLimit", tc.name, err)
		}
		// zstd keeps its window (1 MiB here) and history: about 1.6 MiB.
		slack := uint64(limit / 2)
		if raceEnabled {
			slack = 4 * limit // a dropped pooled decoder is built afresh
		}
		t.Logf("%s: %d compressed bytes claiming %d; allocated %d under a %d bound", tc.name, len(tc.enc), len(bomb), n, limit)
		if n > slack {
			t.Errorf("%s: allocated %d bytes checking under a %d-byte bound", tc.name, n, limit)
		}
		// Within the bound: the same bytes pass a bound above their size.
		if err := CheckDecompressedSize(tc.c, tc.enc, len(bomb)); err != nil {
			t.Errorf("%s: %v within a %d-byte bound", tc.name, err, len(bomb))
		}
	}
	if err := CheckDecompressedSize(CodecGzip, []byte("not gzip"), limit); !errors.Is(err, ErrInvalidRecord) || errors.Is(err, ErrDecompressLimit) {
		t.Errorf("garbage: %v, want ErrInvalidRecord alone", err)
	}
}

// The empty form keeps every header field a consumer or a follower uses to
// place the batch, has no records and no codec, and a valid CRC; kmsg (what
// franz-go decodes with) reads it as a zero-record batch.
func TestEmptied(t *testing.T) {
	o := buildOpts(CodecGzip)
	o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.PartitionLeaderEpoch = 7, 2, 40, 5
	o.Attributes = AttrTransactional | AttrLogAppendTime
	raw := mustBuild(t, o, simpleRecords(10, 100, 3))
	before, err := Check(raw)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Emptied(raw)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Check(out)
	if err != nil {
		t.Fatalf("emptied batch fails its check: %v", err)
	}
	want := before
	want.Length, want.CRC = HeaderSize-lengthFieldEnd, h.CRC
	want.Attributes, want.RecordCount = before.Attributes&^AttrCodecMask, 0
	if h != want {
		t.Fatalf("emptied header\n got %+v\nwant %+v", h, want)
	}
	if h.NextOffset() != 1010 || h.Codec() != CodecNone || !h.IsTransactional() {
		t.Fatalf("emptied header %+v: next offset %d, codec %v", h, h.NextOffset(), h.Codec())
	}
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(out); err != nil || kb.NumRecords != 0 || len(kb.Records) != 0 || kb.LastOffsetDelta != 9 {
		t.Fatalf("kmsg reads the emptied batch as %+v, %v", kb, err)
	}
	if _, err := Emptied(raw[:HeaderSize-1]); err == nil {
		t.Fatal("a short batch was emptied")
	}
}
