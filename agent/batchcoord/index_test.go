package batchcoord

import (
	"testing"
)

func run(obj byte, epoch int32, sizes ...int32) Run {
	r := Run{ObjectID: [16]byte{obj}, Epoch: epoch}
	var delta int32
	var pos int64
	for _, s := range sizes {
		// A batch of s/100 records (at least one), s bytes.
		last := max(s/100, 1) - 1
		r.Batches = append(r.Batches, StoredBatch{OffsetDelta: delta, LastOffsetDelta: last, Position: pos, Size: s, MaxTimestamp: int64(delta)})
		delta += last + 1
		pos += int64(s)
	}
	return r
}

func TestIndex(t *testing.T) {
	x := NewIndex(1000)
	if err := x.Append(1000, run(1, 3, 500, 300)); err != nil { // 1000-1004, 1005-1007
		t.Fatal(err)
	}
	if err := x.Append(1008, run(2, 3, 1000)); err != nil { // 1008-1017
		t.Fatal(err)
	}
	if x.End() != 1018 || x.Len() != 3 {
		t.Fatalf("end %d, %d batches", x.End(), x.Len())
	}
	if err := x.Append(1020, run(3, 3, 100)); err == nil {
		t.Fatal("a run past the end was accepted")
	}
	gap := run(3, 3, 100, 100)
	gap.Batches[1].OffsetDelta = 5
	if err := x.Append(1018, gap); err == nil || x.End() != 1018 {
		t.Fatalf("a run with a gap: %v, end %d", err, x.End())
	}

	for _, c := range []struct {
		offset, max int64
		bases       []int64
	}{
		{1000, 1 << 20, []int64{1000, 1005, 1008}},
		{1003, 1 << 20, []int64{1000, 1005, 1008}}, // inside the first batch
		{1006, 1, []int64{1005}},                   // at least one, past the byte limit
		{1000, 800, []int64{1000, 1005}},
		{1018, 1 << 20, nil}, // the end: nothing yet
	} {
		got, err := x.Find(c.offset, c.max)
		if err != nil {
			t.Fatal(err)
		}
		var bases []int64
		for _, b := range got {
			bases = append(bases, b.BaseOffset)
		}
		if len(bases) != len(c.bases) || len(bases) > 0 && bases[0] != c.bases[0] || len(bases) > 1 && bases[len(bases)-1] != c.bases[len(c.bases)-1] {
			t.Fatalf("Find(%d, %d) = %v, want %v", c.offset, c.max, bases, c.bases)
		}
	}
	if _, err := x.Find(999, 1); err == nil {
		t.Fatal("an offset below the compacted end was found")
	}
	if objs := x.Objects(); len(objs) != 2 || !objs[[16]byte{1}] || !objs[[16]byte{2}] {
		t.Fatalf("objects %v", objs)
	}

	if err := x.TrimTo(1006); err == nil {
		t.Fatal("trimmed inside a batch")
	}
	if err := x.TrimTo(1008); err != nil || x.Start() != 1008 || x.Len() != 1 {
		t.Fatalf("TrimTo(1008): %v, start %d, %d batches", err, x.Start(), x.Len())
	}
	if objs := x.Objects(); len(objs) != 1 || !objs[[16]byte{2}] {
		t.Fatalf("objects after the trim %v: object 1 is released", objs)
	}
	if err := x.TrimTo(1018); err != nil || x.Len() != 0 || x.Start() != 1018 {
		t.Fatalf("TrimTo(end): %v, %d batches", err, x.Len())
	}
}

func TestEndOffsetForEpoch(t *testing.T) {
	h := []EpochStart{{Epoch: 2, StartOffset: 0}, {Epoch: 5, StartOffset: 100}, {Epoch: 6, StartOffset: 250}}
	for _, c := range []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{{1, -1, -1}, {2, 2, 100}, {4, 2, 100}, {5, 5, 250}, {6, 6, 400}, {9, 6, 400}} {
		e, end := EndOffsetForEpoch(h, 400, c.epoch)
		if e != c.wantEpoch || end != c.wantEnd {
			t.Errorf("epoch %d: (%d, %d), want (%d, %d)", c.epoch, e, end, c.wantEpoch, c.wantEnd)
		}
	}
}
