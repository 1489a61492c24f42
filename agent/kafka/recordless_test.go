package kafka

import (
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// TestRecordlessEnd: an answer made only of emptied or control batches is
// record-less, and its end is the last batch's last offset + 1; one batch
// with records, or bytes that are not whole batches, end the search.
func TestRecordlessEnd(t *testing.T) {
	build := func(base int64, lastDelta int32, attrs int16, records int) []byte {
		t.Helper()
		opts := batch.DefaultBuildOptions()
		opts.BaseOffset, opts.Attributes = base, attrs
		var recs []batch.Record
		for range max(records, 1) {
			recs = append(recs, batch.Record{Key: []byte("k"), Value: []byte("v")})
		}
		raw, err := batch.Build(opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		h, err := batch.ParseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		h.LastOffsetDelta = lastDelta
		if records > 0 {
			return raw
		}
		raw, err = batch.BuildRetained(&h, nil) // emptied, as the cleaner leaves it
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	join := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	emptied, marker, records := build(10, 4, 0, 0), build(15, 0, batch.AttrControl|batch.AttrTransactional, 1), build(16, 0, 0, 1)
	for _, c := range []struct {
		name string
		data []byte
		next int64
		ok   bool
	}{
		{"nothing", nil, 0, false},
		{"an emptied batch", emptied, 15, true},
		{"emptied then a marker", join(emptied, marker), 16, true},
		{"a batch with records", records, 0, false},
		{"emptied then records", join(emptied, records), 0, false},
		{"a cut batch", emptied[:len(emptied)-1], 0, false},
	} {
		next, ok := recordlessEnd(c.data)
		if next != c.next || ok != c.ok {
			t.Errorf("%s: (%d, %v), want (%d, %v)", c.name, next, ok, c.next, c.ok)
		}
	}
}
