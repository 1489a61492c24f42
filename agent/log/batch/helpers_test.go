package batch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// newRand returns a seeded source and logs the seed, so that a failure can
// be replayed by pinning it.
func newRand(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// randBytes returns nil (null) sometimes, empty sometimes, else up to max
// bytes drawn from a small alphabet so that the codecs have work to do.
func randBytes(rng *rand.Rand, maxLen int) []byte {
	switch rng.IntN(8) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	b := make([]byte, rng.IntN(maxLen+1))
	for i := range b {
		b[i] = "abcdefgh0123"[rng.IntN(12)]
	}
	return b
}

// randRecords makes n valid records: offset deltas 0..n-1, timestamp deltas
// non-negative and spread out.
func randRecords(rng *rand.Rand, n, maxValue int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta = rng.Int64N(1 << 40)
		r.Attributes = int8(rng.IntN(2))
		r.Key = randBytes(rng, 32)
		r.Value = randBytes(rng, maxValue)
		if nh := rng.IntN(4); nh > 0 {
			r.Headers = make([]RecordHeader, nh)
			for j := range r.Headers {
				r.Headers[j] = RecordHeader{Key: string(randBytes(rng, 10)), Value: randBytes(rng, 20)}
			}
		}
	}
	return recs
}

// simpleRecords makes n records with values of size valueSize and
// timestamp delta i*step.
func simpleRecords(n, valueSize int, step int64) []Record {
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{
			OffsetDelta:    int32(i),
			TimestampDelta: int64(i) * step,
			Key:            []byte(fmt.Sprintf("key-%d", i)),
			Value:          bytes.Repeat([]byte{byte('a' + i%26)}, valueSize),
		}
	}
	return recs
}

func buildOpts(c Codec) BuildOptions {
	o := DefaultBuildOptions()
	o.Codec = c
	o.BaseOffset = 1000
	o.BaseTimestamp = 1_700_000_000_000
	return o
}

func mustBuild(t testing.TB, o BuildOptions, recs []Record) []byte {
	t.Helper()
	raw, err := Build(o, recs)
	if err != nil {
		t.Fatalf("Build(%v): %v", o.Codec, err)
	}
	return raw
}

func equalRecords(t testing.TB, got, want []Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// resign recomputes the CRC after a test edits a batch's bytes, so that the
// edit is what the check under test sees.
func resign(b []byte) []byte {
	putUint32(b[17:], Checksum(b))
	return b
}

func putUint32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
}
