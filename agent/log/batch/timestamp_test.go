package batch

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestOffsetAtTimestamp(t *testing.T) {
	const base = 1_000_000
	// Timestamps out of order, with a repeat, as a producer may send them.
	deltas := []int64{50, 10, 30, 30, 70, 20}
	recs := make([]Record, len(deltas))
	for i, d := range deltas {
		recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: d, Value: []byte("x")}
	}
	tests := []struct {
		ts     int64
		offset int64
		stamp  int64
		ok     bool
	}{
		{math.MinInt64, 100, base + 50, true},
		{0, 100, base + 50, true},
		{base + 50, 100, base + 50, true},
		{base + 51, 104, base + 70, true},
		{base + 70, 104, base + 70, true},
		{base + 71, -1, NoTimestamp, false},
		{math.MaxInt64, -1, NoTimestamp, false},
	}
	for _, c := range allCodecs {
		o := buildOpts(c)
		o.BaseOffset, o.BaseTimestamp = 100, base
		raw := mustBuild(t, o, recs)
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%v/%d", c, tt.ts), func(t *testing.T) {
				off, ts, ok, err := OffsetAtTimestamp(raw, tt.ts, 0)
				if err != nil || off != tt.offset || ts != tt.stamp || ok != tt.ok {
					t.Fatalf("got (%d, %d, %v, %v), want (%d, %d, %v)", off, ts, ok, err, tt.offset, tt.stamp, tt.ok)
				}
			})
		}
		off, ts, err := MaxTimestampOffset(raw, 0)
		if err != nil || off != 104 || ts != base+70 {
			t.Fatalf("%v: MaxTimestampOffset = %d, %d, %v", c, off, ts, err)
		}
	}
}

func TestMaxTimestampFirstOfEqual(t *testing.T) {
	recs := simpleRecords(4, 1, 0) // all timestamps equal
	raw := mustBuild(t, buildOpts(CodecNone), recs)
	off, ts, err := MaxTimestampOffset(raw, 0)
	if err != nil || off != 1000 || ts != buildOpts(CodecNone).BaseTimestamp {
		t.Fatalf("got %d, %d, %v", off, ts, err)
	}
}

func TestLogAppendTimeLookups(t *testing.T) {
	const appendTime = 5_000_000
	for _, c := range allCodecs {
		o := buildOpts(c)
		o.BaseOffset, o.BaseTimestamp = 10, 1_000 // client's CreateTime, ignored below
		raw := mustBuild(t, o, simpleRecords(5, 3, 1000))
		SetLogAppendTime(raw, appendTime)
		if _, err := Check(raw); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			ts     int64
			offset int64
			ok     bool
		}{
			{0, 10, true},
			{appendTime, 10, true},
			{appendTime + 1, -1, false},
			{2_000, 10, true}, // above some CreateTimes, below the append time
		} {
			off, ts, ok, err := OffsetAtTimestamp(raw, tt.ts, 0)
			wantTS := int64(appendTime)
			if !tt.ok {
				wantTS = NoTimestamp
			}
			if err != nil || off != tt.offset || ok != tt.ok || ts != wantTS {
				t.Fatalf("%v at %d: got (%d, %d, %v, %v)", c, tt.ts, off, ts, ok, err)
			}
		}
		off, ts, err := MaxTimestampOffset(raw, 0)
		if err != nil || off != 10 || ts != appendTime {
			t.Fatalf("%v: MaxTimestampOffset = %d, %d, %v", c, off, ts, err)
		}
		info, err := Inspect(raw, ValidateOptions{})
		if err != nil || info.MaxTimestamp != appendTime || info.MaxTimestampDelta != 0 {
			t.Fatalf("%v: Inspect = %+v, %v", c, info, err)
		}
	}
}

func TestTimestampLookupErrors(t *testing.T) {
	raw := mustBuild(t, buildOpts(CodecNone), simpleRecords(3, 3, 1))
	raw[len(raw)-1] ^= 1
	if _, _, _, err := OffsetAtTimestamp(raw, 0, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OffsetAtTimestamp: %v", err)
	}
	if _, _, err := MaxTimestampOffset(raw, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("MaxTimestampOffset: %v", err)
	}
	// Control batches (transaction markers) are looked up like any other.
	o := buildOpts(CodecNone)
	o.Attributes = AttrControl | AttrTransactional
	o.ProducerID, o.BaseSequence = 1, 0
	ctl := mustBuild(t, o, []Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	if off, _, ok, err := OffsetAtTimestamp(ctl, 0, 0); err != nil || !ok || off != 1000 {
		t.Fatalf("control: %d %v %v", off, ok, err)
	}
	// An empty batch (compaction leaves them) has no max timestamp.
	empty := rawBatch(buildOpts(CodecNone), nil, 0, 0)
	if off, ts, err := MaxTimestampOffset(empty, 0); err != nil || off != -1 || ts != NoTimestamp {
		t.Fatalf("empty: %d %d %v", off, ts, err)
	}
}
