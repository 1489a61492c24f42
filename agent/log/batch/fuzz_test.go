package batch

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzValidate feeds arbitrary bytes to Validate. It must not panic, and
// whatever it accepts must pass Check and decode with Records into exactly
// RecordCount records whose offset deltas are 0..n-1. The timestamp
// lookups and Recompress must also cope with whatever Validate accepts.
//
// The seed corpus is valid batches of every codec plus a few near-misses;
// run `go test -fuzz FuzzValidate ./agent/log/batch/` to explore further.
func FuzzValidate(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2)) // fixed: the corpus must be stable
	for _, c := range allCodecs {
		for _, n := range []int{1, 3, 20} {
			o := buildOpts(c)
			raw, err := Build(o, randRecords(rng, n, 40))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw, false)
			f.Add(raw, true)
			f.Add(raw[:len(raw)-1], false)
		}
	}
	f.Add([]byte{}, false)
	f.Add(make([]byte, HeaderSize), false)
	f.Add(rawBatch(buildOpts(CodecNone), hand(-1, []byte{0}, v(0), v(0), v(-1), v(-1), v(0)), 1, 0), false)

	f.Fuzz(func(t *testing.T, raw []byte, checkTimes bool) {
		opts := ValidateOptions{MaxDecompressed: 1 << 20, CheckTimestamps: checkTimes,
			MinTimestamp: 0, MaxTimestamp: math.MaxInt64}
		h, err := Validate(raw, opts)
		// The lookups take batches from the log, not from clients, but
		// they must not panic on anything either.
		_, _, _, terr := OffsetAtTimestamp(raw, 1, 1<<20)
		_, _, merr := MaxTimestampOffset(raw, 1<<20)
		if err != nil {
			if !errors.Is(err, ErrShort) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMagic) &&
				!errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrInvalidTimestamp) &&
				!errors.Is(err, ErrUnsupportedCodec) {
				t.Fatalf("Validate error wraps no sentinel: %v", err)
			}
			return
		}
		if terr != nil || merr != nil {
			t.Fatalf("accepted by Validate but lookups fail: %v, %v", terr, merr)
		}
		ch, err := Check(raw)
		if err != nil || ch != h {
			t.Fatalf("accepted by Validate but Check: %v (%+v vs %+v)", err, ch, h)
		}
		rh, recs, err := Records(raw, opts.MaxDecompressed)
		if err != nil || rh != h {
			t.Fatalf("accepted by Validate but Records: %v", err)
		}
		if len(recs) != int(h.RecordCount) {
			t.Fatalf("%d records, header counts %d", len(recs), h.RecordCount)
		}
		for i, r := range recs {
			if r.OffsetDelta != int32(i) {
				t.Fatalf("record %d has offset delta %d", i, r.OffsetDelta)
			}
		}
		// Recompressing to any codec keeps the records.
		to := allCodecs[int(h.LastOffsetDelta)%len(allCodecs)]
		out, err := Recompress(raw, to, opts.MaxDecompressed)
		if err != nil {
			t.Fatalf("Recompress to %v: %v", to, err)
		}
		if _, err := Validate(out, ValidateOptions{MaxDecompressed: opts.MaxDecompressed}); err != nil {
			t.Fatalf("recompressed batch fails Validate: %v", err)
		}
		_, again, err := Records(out, opts.MaxDecompressed)
		if err != nil {
			t.Fatal(err)
		}
		equalRecords(t, again, recs)
	})
}

// FuzzRecordsSection fuzzes what lies behind a correct header and CRC,
// which random bytes for FuzzValidate almost never reach: the records
// walker and the decompressors. The same properties must hold.
func FuzzRecordsSection(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range allCodecs {
		recs := randRecords(rng, 4, 30)
		sec, err := Compress(c, section(recs...))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(sec, int32(len(recs)), uint8(c))
	}
	f.Fuzz(func(t *testing.T, sec []byte, count int32, codec uint8) {
		o := buildOpts(Codec(codec & AttrCodecMask))
		raw := rawBatch(o, sec, count, count-1)
		const limit = 1 << 20
		h, err := Validate(raw, ValidateOptions{MaxDecompressed: limit})
		_, _, _, _ = OffsetAtTimestamp(raw, 0, limit)
		_, _, _ = MaxTimestampOffset(raw, limit)
		_, _, rerr := Records(raw, limit)
		// The fetch path's check agrees with decompressing about the limit
		// (snappy it judges by the lengths claimed, without decoding).
		_, derr := Decompress(o.Codec, sec, limit)
		cerr := CheckDecompressedSize(o.Codec, sec, limit)
		if errors.Is(cerr, ErrDecompressLimit) != errors.Is(derr, ErrDecompressLimit) || derr == nil && cerr != nil {
			t.Fatalf("%v: CheckDecompressedSize %v, Decompress %v", o.Codec, cerr, derr)
		}
		if e, eerr := Emptied(raw); eerr == nil {
			if _, err := Check(e); err != nil {
				t.Fatalf("emptied batch: %v", err)
			}
		}
		if err != nil {
			return
		}
		if rerr != nil {
			t.Fatalf("accepted by Validate but Records: %v", rerr)
		}
		_, recs, _ := Records(raw, limit)
		if len(recs) != int(h.RecordCount) {
			t.Fatalf("%d records, header counts %d", len(recs), h.RecordCount)
		}
	})
}
