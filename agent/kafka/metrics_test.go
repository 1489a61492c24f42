package kafka

import (
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// TestRecordCount: the records of a fetch's batches are summed from their
// headers, a compressed batch included, and a batch cut short at the end
// of a fetch is not counted.
func TestRecordCount(t *testing.T) {
	build := func(codec batch.Codec, n int) []byte {
		t.Helper()
		opts := batch.DefaultBuildOptions()
		opts.Codec = codec
		recs := make([]batch.Record, n)
		for i := range recs {
			recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte("value")}
		}
		raw, err := batch.Build(opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	three, five := build(batch.CodecNone, 3), build(batch.CodecZstd, 5)
	both := append(append([]byte{}, three...), five...)
	for _, c := range []struct {
		name string
		b    []byte
		want int
	}{
		{"nothing", nil, 0},
		{"one batch", three, 3},
		{"two batches, one compressed", both, 8},
		{"the second cut short", both[:len(both)-1], 3},
		{"a header cut short", both[:len(three)+20], 3},
		{"not a batch", []byte("not a record batch at all, just text"), 0},
	} {
		if got := recordCount(c.b); got != c.want {
			t.Errorf("%s: %d records, want %d", c.name, got, c.want)
		}
	}
}
