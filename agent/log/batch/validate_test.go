package batch

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// rawBatch frames an arbitrary records section, for batches Build cannot
// make. The CRC is right, so only the records are wrong.
func rawBatch(o BuildOptions, section []byte, count, lastOffsetDelta int32) []byte {
	out := make([]byte, HeaderSize, HeaderSize+len(section))
	out = append(out, section...)
	h := Header{
		BaseOffset: o.BaseOffset, Length: int32(len(out) - lengthFieldEnd),
		PartitionLeaderEpoch: o.PartitionLeaderEpoch, Magic: 2,
		Attributes: o.Attributes | int16(o.Codec), LastOffsetDelta: lastOffsetDelta,
		BaseTimestamp: o.BaseTimestamp, MaxTimestamp: o.BaseTimestamp,
		ProducerID: o.ProducerID, ProducerEpoch: o.ProducerEpoch, BaseSequence: o.BaseSequence,
		RecordCount: count,
	}
	putHeader(out, &h)
	return out
}

// section encodes records without checking them.
func section(recs ...Record) []byte {
	var b []byte
	for i := range recs {
		b = AppendRecord(b, &recs[i])
	}
	return b
}

// hand builds a record body by hand, prefixed by the given length (or by
// its true length when length < 0).
func hand(length int64, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	if length < 0 {
		length = int64(len(b))
	}
	return append(appendVarint(nil, length), b...)
}

func v(x int64) []byte { return appendVarint(nil, x) }

func TestValidateAcceptsValid(t *testing.T) {
	rng := newRand(t)
	for _, c := range allCodecs {
		recs := randRecords(rng, 50, 100)
		raw := mustBuild(t, buildOpts(c), recs)
		info, err := Inspect(raw, ValidateOptions{})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		want, _ := Check(raw)
		if info.Header != want || info.RecordsSize != len(section(recs...)) {
			t.Fatalf("%v: info %+v", c, info)
		}
		off, ts, _ := MaxTimestampOffset(raw, 0)
		if info.MaxTimestamp != ts || int64(info.MaxTimestampDelta)+want.BaseOffset != off {
			t.Fatalf("%v: max timestamp %d@%d, MaxTimestampOffset says %d@%d",
				c, info.MaxTimestamp, info.MaxTimestampDelta, ts, off)
		}
	}
	// Idempotent and transactional batches with proper producer fields.
	o := buildOpts(CodecNone)
	o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Attributes = 1, 0, 0, AttrTransactional
	if _, err := Validate(mustBuild(t, o, simpleRecords(3, 5, 1)), ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	o := buildOpts(CodecNone)
	good := mustBuild(t, o, simpleRecords(5, 20, 10))
	rec := func(i int) Record { return simpleRecords(i+1, 3, 1)[i] }

	edit := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	withOpts := func(f func(o *BuildOptions)) []byte {
		o := buildOpts(CodecNone)
		f(&o)
		raw, err := Build(o, simpleRecords(3, 5, 1))
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	bigZstd := mustBuild(t, buildOpts(CodecZstd), simpleRecords(100, 10000, 1))

	tests := []struct {
		name string
		raw  []byte
		opts ValidateOptions
		want error
	}{
		{"bad crc", edit(func(b []byte) { b[len(b)-2] ^= 0x40 }), ValidateOptions{}, ErrCorrupt},
		{"truncated batch", good[:len(good)-1], ValidateOptions{}, ErrShort},
		{"only a header", good[:HeaderSize-1], ValidateOptions{}, ErrShort},
		{"trailing byte", append(bytes.Clone(good), 0), ValidateOptions{}, ErrCorrupt},
		{"magic 1", edit(func(b []byte) { b[16] = 1 }), ValidateOptions{}, ErrMagic},
		{"count above records", rawBatch(o, section(rec(0), rec(1)), 3, 2), ValidateOptions{}, ErrInvalidRecord},
		{"count below records", rawBatch(o, section(rec(0), rec(1), rec(2)), 2, 1), ValidateOptions{}, ErrInvalidRecord},
		{"zero records", rawBatch(o, nil, 0, 0), ValidateOptions{}, ErrInvalidRecord},
		{"last offset delta", rawBatch(o, section(rec(0), rec(1)), 2, 3), ValidateOptions{}, ErrInvalidRecord},
		{"offset delta gap", rawBatch(o, section(rec(0), rec(1), rec(3)), 3, 2), ValidateOptions{}, ErrInvalidRecord},
		{"offset deltas swapped", rawBatch(o, section(rec(1), rec(0)), 2, 1), ValidateOptions{}, ErrInvalidRecord},
		{"truncated record", rawBatch(o, section(rec(0), rec(1))[:len(section(rec(0), rec(1)))-1], 2, 1), ValidateOptions{}, ErrInvalidRecord},
		{"record length past end", rawBatch(o, hand(1000, []byte{0}, v(0), v(0), v(-1), v(-1), v(0)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"record length below minimum", rawBatch(o, hand(5, []byte{0}, v(0), v(0), v(-1), v(-1)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"record length too long a varint", rawBatch(o, []byte{0x86, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0, 0, 1, 1, 0}, 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"record length negative", rawBatch(o, append(v(-1), 0, 0, 0, 1, 1, 0), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"key past record", rawBatch(o, hand(-1, []byte{0}, v(0), v(0), v(50), []byte("k"), v(-1), v(0)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"key length -2", rawBatch(o, hand(-1, []byte{0}, v(0), v(0), v(-2), v(-1), v(0)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"value past record", rawBatch(o, hand(-1, []byte{0}, v(0), v(0), v(-1), v(9), []byte("abc"), v(0)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"header count huge", rawBatch(o, hand(-1, []byte{0}, v(0), v(0), v(-1), v(-1), v(math.MaxInt32)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"header count negative", rawBatch(o, hand(-1, []byte{0}, v(0), v(0), v(-1), v(-1), v(-1)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"header key null", rawBatch(o, hand(-1, []byte{0}, v(0), v(0), v(-1), v(-1), v(1), v(-1), v(-1)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"record longer than fields", rawBatch(o, hand(-1, []byte{0}, v(0), v(0), v(-1), v(-1), v(0), []byte{7}), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"offset delta too long", rawBatch(o, hand(-1, []byte{0}, v(0), []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, v(-1), v(-1), v(0)), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"control batch", withOpts(func(o *BuildOptions) { o.Attributes = AttrControl }), ValidateOptions{}, ErrInvalidRecord},
		{"codec 5", withOpts(func(o *BuildOptions) {}), ValidateOptions{}, ErrUnsupportedCodec},
		{"codec 7", withOpts(func(o *BuildOptions) {}), ValidateOptions{}, ErrUnsupportedCodec},
		{"producer without sequence", withOpts(func(o *BuildOptions) { o.ProducerID = 3 }), ValidateOptions{}, ErrInvalidRecord},
		{"transactional without producer", withOpts(func(o *BuildOptions) { o.Attributes = AttrTransactional }), ValidateOptions{}, ErrInvalidRecord},
		{"bomb", bigZstd, ValidateOptions{MaxDecompressed: 100 << 10}, ErrDecompressLimit},
		{"garbage zstd", rawBatch(buildOpts(CodecZstd), []byte("not zstd at all"), 1, 0), ValidateOptions{}, ErrInvalidRecord},
		{"timestamp before window", good, ValidateOptions{CheckTimestamps: true, MinTimestamp: o.BaseTimestamp + 1, MaxTimestamp: math.MaxInt64}, ErrInvalidTimestamp},
		{"timestamp after window", good, ValidateOptions{CheckTimestamps: true, MinTimestamp: math.MinInt64, MaxTimestamp: o.BaseTimestamp + 39}, ErrInvalidTimestamp},
		{"timestamp overflow", rawBatch(func() BuildOptions { o := o; o.BaseTimestamp = math.MaxInt64 - 1; return o }(),
			section(Record{TimestampDelta: 5}), 1, 0), ValidateOptions{CheckTimestamps: true, MinTimestamp: math.MinInt64, MaxTimestamp: math.MaxInt64}, ErrInvalidTimestamp},
	}
	// The codec ids need the bits set after Build (which refuses them).
	for i := range tests {
		switch tests[i].name {
		case "codec 5", "codec 7":
			id := map[string]byte{"codec 5": 5, "codec 7": 7}[tests[i].name]
			tests[i].raw[22] = tests[i].raw[22]&^7 | id
			resign(tests[i].raw)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate(tt.raw, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Validate = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestValidateTimestampWindow(t *testing.T) {
	o := buildOpts(CodecLZ4)
	raw := mustBuild(t, o, simpleRecords(5, 20, 10)) // timestamps base .. base+40
	base := o.BaseTimestamp
	inside := ValidateOptions{CheckTimestamps: true, MinTimestamp: base, MaxTimestamp: base + 40}
	if _, err := Validate(raw, inside); err != nil {
		t.Fatalf("inclusive window: %v", err)
	}
	// Records with no timestamp (-1) are exempt, as in Kafka.
	o.BaseTimestamp = NoTimestamp
	legacy := mustBuild(t, o, []Record{{OffsetDelta: 0}})
	if _, err := Validate(legacy, inside); err != nil {
		t.Fatalf("NoTimestamp: %v", err)
	}
	// Without CheckTimestamps the window is ignored.
	if _, err := Validate(raw, ValidateOptions{MinTimestamp: 0, MaxTimestamp: 0}); err != nil {
		t.Fatal(err)
	}
	var re *RecordError
	_, err := Validate(raw, ValidateOptions{CheckTimestamps: true, MinTimestamp: math.MinInt64, MaxTimestamp: base + 25})
	if !errors.As(err, &re) || re.Index != 3 {
		t.Fatalf("want a RecordError at record 3, got %v", err)
	}
}

func TestValidateAllocs(t *testing.T) {
	for _, c := range allCodecs {
		raw := mustBuild(t, buildOpts(c), simpleRecords(100, 100, 1))
		if _, err := Validate(raw, ValidateOptions{}); err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := Validate(raw, ValidateOptions{CheckTimestamps: true, MinTimestamp: math.MinInt64, MaxTimestamp: math.MaxInt64}); err != nil {
				t.Fatal(err)
			}
		})
		switch {
		case c == CodecNone && allocs != 0:
			t.Errorf("%v: %.1f allocations per Validate, want 0", c, allocs)
		case !raceEnabled && allocs > 1: // the race detector drops pooled buffers at random
			t.Errorf("%v: %.1f allocations per Validate", c, allocs)
		}
	}
}

// On a compacted topic every record needs a key; elsewhere a null key is
// fine. An empty key is a key.
func TestValidateRequireKeys(t *testing.T) {
	for _, c := range allCodecs {
		keyed := mustBuild(t, buildOpts(c), []Record{{Key: []byte{}, Value: []byte("v")}, {OffsetDelta: 1, Key: []byte("k")}})
		keyless := mustBuild(t, buildOpts(c), []Record{{Key: []byte("k"), Value: []byte("v")}, {OffsetDelta: 1, Value: []byte("v")}})
		if _, err := Validate(keyed, ValidateOptions{RequireKeys: true}); err != nil {
			t.Fatalf("%v: keyed batch: %v", c, err)
		}
		if _, err := Validate(keyless, ValidateOptions{}); err != nil {
			t.Fatalf("%v: keyless batch without RequireKeys: %v", c, err)
		}
		var re *RecordError
		if _, err := Validate(keyless, ValidateOptions{RequireKeys: true}); !errors.As(err, &re) || re.Index != 1 || !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("%v: keyless batch: %v, want ErrInvalidRecord at record 1", c, err)
		}
	}
}
