package producers

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// step is one batch offered to a State: Check, then Update if Check let it
// be written. Offsets are assigned from 0 in the order of the script.
type step struct {
	pid     int64
	epoch   int16
	seq     int32 // base sequence; -1 for none
	records int32 // 1 if zero
	txn     bool
	marker  batch.ControlType // a control batch of this type; 0 with control false is none
	control bool
	coord   int32 // the marker's coordinator epoch

	// Expected: a duplicate of the batch at dupOf, or err, or written at
	// the next offset; a marker's completion.
	dupOf int64 // -1 when no duplicate is expected
	err   error
	done  *Completed
}

// batchStep and markerStep build the steps of the scripts.
func batchStep(pid int64, epoch int16, seq int32) step {
	return step{pid: pid, epoch: epoch, seq: seq, dupOf: -1}
}

func markerStep(pid int64, epoch int16, t batch.ControlType, coord int32) step {
	return step{pid: pid, epoch: epoch, seq: -1, control: true, marker: t, coord: coord, dupOf: -1}
}

func (s step) n(records int32) step       { s.records = records; return s }
func (s step) transactional() step        { s.txn = true; return s }
func (s step) dup(offset int64) step      { s.dupOf = offset; return s }
func (s step) fails(err error) step       { s.err = err; return s }
func (s step) completes(c Completed) step { s.done = &c; return s }
func (s step) header(offset int64) batch.Header {
	h := batch.Header{ProducerID: s.pid, ProducerEpoch: s.epoch, BaseSequence: s.seq, BaseOffset: offset,
		LastOffsetDelta: max(s.records, 1) - 1, MaxTimestamp: offset}
	if s.txn {
		h.Attributes |= batch.AttrTransactional
	}
	if s.control {
		h.Attributes |= batch.AttrControl | batch.AttrTransactional
	}
	return h
}

// run plays steps on s from offset next and returns the next offset.
func run(t *testing.T, s *State, next int64, steps []step) int64 {
	t.Helper()
	for i, st := range steps {
		h := st.header(next)
		m := batch.Marker{Type: -1}
		if st.control {
			m = batch.Marker{Type: st.marker, CoordinatorEpoch: st.coord}
		}
		before := s.Encode(0)
		dup, err := s.Check(&h, m)
		if after := s.Encode(0); string(after) != string(before) {
			t.Fatalf("step %d: Check changed the state", i)
		}
		switch {
		case st.err != nil || err != nil:
			if !errors.Is(err, st.err) || st.err == nil {
				t.Fatalf("step %d (%+v): err %v, want %v", i, st, err, st.err)
			}
			continue
		case st.dupOf >= 0:
			if dup == nil || dup.FirstOffset != st.dupOf || dup.FirstSeq != st.seq {
				t.Fatalf("step %d (%+v): duplicate %+v, want the batch at %d", i, st, dup, st.dupOf)
			}
			continue
		case dup != nil:
			t.Fatalf("step %d (%+v): unexpected duplicate %+v", i, st, dup)
		}
		done := s.Update(&h, m)
		switch {
		case st.done == nil && done != nil:
			t.Fatalf("step %d (%+v): completed %+v, want nothing", i, st, done)
		case st.done != nil && (done == nil || *done != *st.done):
			t.Fatalf("step %d (%+v): completed %+v, want %+v", i, st, done, *st.done)
		}
		next = h.LastOffset() + 1
	}
	return next
}

func TestRules(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"an unknown producer starts at any sequence", []step{
			batchStep(7, 0, 42),
			batchStep(7, 0, 43),
		}},
		{"sequences follow the last batch", []step{
			batchStep(7, 0, 0).n(3), // 0..2
			batchStep(7, 0, 3),      // 3
			batchStep(7, 0, 5).fails(ErrOutOfOrderSequence),
			batchStep(7, 0, 3).n(2).fails(ErrOutOfOrderSequence), // overlaps, not a retry
			batchStep(7, 0, 4),
		}},
		{"a retry of a kept batch is answered with its offsets", []step{
			batchStep(7, 0, 0).n(2),
			batchStep(7, 0, 2),
			batchStep(7, 0, 0).n(2).dup(0),
			batchStep(7, 0, 2).dup(2),
		}},
		{"only the last five batches are kept", []step{
			batchStep(1, 0, 0), batchStep(1, 0, 1), batchStep(1, 0, 2), batchStep(1, 0, 3),
			batchStep(1, 0, 4), batchStep(1, 0, 5), batchStep(1, 0, 6),
			batchStep(1, 0, 2).dup(2),
			batchStep(1, 0, 1).fails(ErrOutOfOrderSequence),
		}},
		{"sequences wrap at MaxInt32", []step{
			batchStep(3, 0, math.MaxInt32-1).n(2),
			batchStep(3, 0, 0),
			batchStep(3, 0, math.MaxInt32-1).n(2).dup(0),
		}},
		{"a batch wrapping past MaxInt32", []step{
			batchStep(3, 0, math.MaxInt32).n(2), // last sequence 0
			batchStep(3, 0, 1),
		}},
		{"a new epoch starts at 0 and fences the old one", []step{
			batchStep(7, 0, 45),
			batchStep(7, 1, 46).fails(ErrOutOfOrderSequence),
			batchStep(7, 1, 0),
			batchStep(7, 0, 46).fails(ErrInvalidProducerEpoch),
			batchStep(7, 0, 45).fails(ErrInvalidProducerEpoch), // an old retry too
			batchStep(7, 1, 1),
		}},
		{"a new epoch forgets the old epoch's batches", []step{
			batchStep(7, 0, 0),
			batchStep(7, 0, 1),
			batchStep(7, 1, 0),
			batchStep(7, 1, 0).dup(2),
			batchStep(7, 1, 1),
		}},
		{"batches without sequences pass", []step{
			batchStep(-1, 0, -1),
			batchStep(7, 0, 5),
			batchStep(7, 0, -1), // a producer id but no sequence
			batchStep(7, 0, 6),
		}},
		{"a transaction commits", []step{
			batchStep(9, 0, 0).transactional(),
			batchStep(9, 0, 1).transactional(),
			batchStep(9, 0, 2).fails(ErrInvalidTxnState),
			markerStep(9, 0, batch.ControlCommit, 4).completes(Completed{ProducerID: 9, FirstOffset: 0, MarkerOffset: 2, FirstUnstableAfter: -1}),
			batchStep(9, 0, 2),
		}},
		{"an abort reports the transaction still open", []step{
			batchStep(9, 0, 0).transactional(),
			batchStep(10, 0, 0).transactional(),
			markerStep(9, 0, batch.ControlAbort, 1).completes(Completed{ProducerID: 9, FirstOffset: 0, MarkerOffset: 2, Aborted: true, FirstUnstableAfter: 1}),
		}},
		{"a marker with nothing open completes an empty transaction", []step{
			markerStep(9, 0, batch.ControlAbort, 0).completes(Completed{ProducerID: 9, FirstOffset: 0, MarkerOffset: 0, Aborted: true, FirstUnstableAfter: -1}),
		}},
		{"markers are fenced by producer and coordinator epochs", []step{
			batchStep(7, 1, 0).transactional(),
			markerStep(7, 0, batch.ControlCommit, 5).fails(ErrInvalidProducerEpoch),
			markerStep(7, 1, batch.ControlCommit, 5).completes(Completed{ProducerID: 7, FirstOffset: 0, MarkerOffset: 1, FirstUnstableAfter: -1}),
			batchStep(7, 2, 0).transactional(),
			markerStep(7, 2, batch.ControlAbort, 4).fails(ErrCoordinatorFenced),
			markerStep(7, 2, batch.ControlAbort, 5).completes(Completed{ProducerID: 7, FirstOffset: 2, MarkerOffset: 3, Aborted: true, FirstUnstableAfter: -1}),
		}},
		{"a control record that is no marker decides nothing", []step{
			batchStep(7, 0, 0).transactional(),
			markerStep(7, 0, 5, 0),
			batchStep(7, 0, 1).fails(ErrInvalidTxnState),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			run(t, New(), 0, c.steps)
		})
	}
}

func TestFirstUnstableAndTxnOpen(t *testing.T) {
	s := New()
	if s.FirstUnstable() != -1 {
		t.Fatalf("empty: first unstable %d", s.FirstUnstable())
	}
	run(t, s, 0, []step{
		batchStep(1, 0, 0),
		batchStep(2, 3, 0).transactional(), // offset 1
		batchStep(3, 0, 0).transactional(), // offset 2
		markerStep(2, 3, batch.ControlCommit, 0).completes(Completed{ProducerID: 2, FirstOffset: 1, MarkerOffset: 3, FirstUnstableAfter: 2}),
		batchStep(2, 4, 0).transactional(), // offset 4
	})
	if f := s.FirstUnstable(); f != 2 {
		t.Fatalf("first unstable %d, want 2", f)
	}
	for _, c := range []struct {
		pid   int64
		epoch int16
		want  bool
	}{{1, 0, false}, {2, 4, true}, {2, 3, false}, {3, 0, true}, {3, 1, false}, {4, 0, false}} {
		if got := s.TxnOpen(c.pid, c.epoch); got != c.want {
			t.Errorf("TxnOpen(%d, %d) = %v, want %v", c.pid, c.epoch, got, c.want)
		}
	}
}

func TestExpire(t *testing.T) {
	s := New()
	for _, h := range []batch.Header{
		{ProducerID: 1, BaseSequence: 0, BaseOffset: 0, MaxTimestamp: 1_000},
		{ProducerID: 2, BaseSequence: 0, BaseOffset: 1, MaxTimestamp: 1_600},
		{ProducerID: 3, BaseSequence: 0, BaseOffset: 2, MaxTimestamp: 1_000, Attributes: batch.AttrTransactional},
	} {
		s.Update(&h, batch.Marker{Type: -1})
	}
	if n := s.Expire(2_000, 0); n != 0 || s.Len() != 3 {
		t.Fatalf("no ttl: expired %d, %d left", n, s.Len())
	}
	if n := s.Expire(2_000, 1_000); n != 1 || s.Len() != 2 {
		t.Fatalf("expired %d, %d left; want producer 1 only", n, s.Len())
	}
	if _, ok := s.Producer(1); ok {
		t.Fatal("producer 1 kept")
	}
	// Expired, its state is unknown: any sequence goes.
	h := batch.Header{ProducerID: 1, BaseSequence: 9, BaseOffset: 3}
	if dup, err := s.Check(&h, batch.Marker{Type: -1}); dup != nil || err != nil {
		t.Fatalf("after expiry: %+v %v", dup, err)
	}
	// Producer 3's open transaction keeps it however old.
	if n := s.Expire(1_000_000, 1_000); n != 1 || s.Len() != 1 || !s.TxnOpen(3, 0) {
		t.Fatalf("expired %d, %d left; want producer 3 kept", n, s.Len())
	}
}

func TestAccessorsCopy(t *testing.T) {
	s := New()
	h := batch.Header{ProducerID: 4, ProducerEpoch: 2, BaseSequence: 7, BaseOffset: 10, LastOffsetDelta: 1, MaxTimestamp: 99}
	s.Update(&h, batch.Marker{Type: -1})
	p, ok := s.Producer(4)
	want := Producer{ID: 4, Epoch: 2, LastTimestamp: 99, TxnFirst: -1, CoordinatorEpoch: -1,
		Batches: []Batch{{FirstSeq: 7, LastSeq: 8, FirstOffset: 10, LastOffset: 11}}}
	if !ok || !reflect.DeepEqual(p, want) {
		t.Fatalf("Producer(4) = %+v, want %+v", p, want)
	}
	p.Batches[0].LastOffset = 0
	var seen []Producer
	s.Each(func(p Producer) { seen = append(seen, p) })
	if len(seen) != 1 || !reflect.DeepEqual(seen[0], want) {
		t.Fatalf("Each saw %+v, want %+v (Producer's copy must not alias)", seen, want)
	}
}
