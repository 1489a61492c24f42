package batch

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestBuildRecordsRoundTrip(t *testing.T) {
	rng := newRand(t)
	for _, c := range allCodecs {
		for _, n := range []int{1, 2, 17, 500} {
			t.Run(fmt.Sprintf("%v/%d", c, n), func(t *testing.T) {
				recs := randRecords(rng, n, 300)
				o := buildOpts(c)
				o.ProducerID, o.ProducerEpoch, o.BaseSequence = 77, 3, 10
				o.PartitionLeaderEpoch = 9
				raw := mustBuild(t, o, recs)
				h, got, err := Records(raw, 0)
				if err != nil {
					t.Fatalf("Records: %v", err)
				}
				equalRecords(t, got, recs)
				if h.Codec() != c || h.RecordCount != int32(n) || h.LastOffsetDelta != int32(n-1) ||
					h.BaseOffset != 1000 || h.ProducerID != 77 || h.ProducerEpoch != 3 ||
					h.BaseSequence != 10 || h.PartitionLeaderEpoch != 9 {
					t.Fatalf("header %+v", h)
				}
				var maxDelta int64
				for _, r := range recs {
					maxDelta = max(maxDelta, r.TimestampDelta)
				}
				if h.MaxTimestamp != o.BaseTimestamp+maxDelta {
					t.Fatalf("max timestamp %d, want %d", h.MaxTimestamp, o.BaseTimestamp+maxDelta)
				}
				if _, err := Validate(raw, ValidateOptions{}); err != nil {
					t.Fatalf("Validate: %v", err)
				}
			})
		}
	}
}

// Records from an uncompressed batch alias it; with a compressed one they
// must not alias the pooled buffer that a later call reuses.
func TestRecordsCompressedDoNotAliasPool(t *testing.T) {
	recs := simpleRecords(10, 100, 1)
	raw := mustBuild(t, buildOpts(CodecZstd), recs)
	_, got, err := Records(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	other := mustBuild(t, buildOpts(CodecZstd), simpleRecords(10, 100, 7))
	for range 5 {
		if _, err := Validate(other, ValidateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	equalRecords(t, got, recs)
}

func TestRecompressEveryPair(t *testing.T) {
	rng := newRand(t)
	recs := randRecords(rng, 200, 500)
	for _, from := range allCodecs {
		o := buildOpts(from)
		o.ProducerID, o.ProducerEpoch, o.BaseSequence = 5, 1, 0
		o.Attributes = AttrTransactional
		src := mustBuild(t, o, recs)
		srcHeader, _ := Check(src)
		for _, to := range allCodecs {
			t.Run(fmt.Sprintf("%v-%v", from, to), func(t *testing.T) {
				out, err := Recompress(src, to, 0)
				if err != nil {
					t.Fatalf("Recompress: %v", err)
				}
				h, err := Check(out)
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				if h.Codec() != to {
					t.Fatalf("codec %v", h.Codec())
				}
				// Everything but codec bits, length and CRC is kept.
				want := srcHeader
				want.Attributes = want.Attributes&^AttrCodecMask | int16(to)
				want.Length, want.CRC = h.Length, h.CRC
				if h != want {
					t.Fatalf("header\n got %+v\nwant %+v", h, want)
				}
				_, got, err := Records(out, 0)
				if err != nil {
					t.Fatalf("Records: %v", err)
				}
				equalRecords(t, got, recs)
				if _, err := Validate(out, ValidateOptions{}); err != nil {
					t.Fatalf("Validate: %v", err)
				}
			})
		}
	}
}

func TestRecompressErrors(t *testing.T) {
	raw := mustBuild(t, buildOpts(CodecNone), simpleRecords(3, 10, 1))
	if _, err := Recompress(raw, Codec(5), 0); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("codec 5: %v", err)
	}
	bad := bytes.Clone(raw)
	bad[len(bad)-1] ^= 1
	if _, err := Recompress(bad, CodecZstd, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad crc: %v", err)
	}
	big := mustBuild(t, buildOpts(CodecGzip), simpleRecords(10, 1000, 1))
	if _, err := Recompress(big, CodecNone, 1000); !errors.Is(err, ErrDecompressLimit) {
		t.Fatalf("limit: %v", err)
	}
}

func TestBuildRejectsBadCodec(t *testing.T) {
	o := buildOpts(Codec(6))
	if _, err := Build(o, simpleRecords(1, 1, 0)); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("got %v", err)
	}
}

func TestSetMaxTimestamp(t *testing.T) {
	raw := mustBuild(t, buildOpts(CodecNone), simpleRecords(3, 10, 5))
	SetMaxTimestamp(raw, 42)
	h, err := Check(raw)
	if err != nil || h.MaxTimestamp != 42 {
		t.Fatalf("%+v %v", h, err)
	}
}
