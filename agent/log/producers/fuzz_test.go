package producers

import (
	"bytes"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// FuzzDecode: Decode never panics, and whatever it accepts is exactly one
// encoding: it re-encodes to the same bytes, in the layout it was read in.
// An accepted state must also take further batches without panicking.
func FuzzDecode(f *testing.F) {
	s := New()
	for _, h := range []batch.Header{
		{ProducerID: 3, ProducerEpoch: 2, BaseSequence: 0, BaseOffset: 0, LastOffsetDelta: 1, MaxTimestamp: 5},
		{ProducerID: 3, ProducerEpoch: 2, BaseSequence: 2, BaseOffset: 2, MaxTimestamp: 6},
		{ProducerID: 9, BaseSequence: -1, BaseOffset: 3, MaxTimestamp: 7},
	} {
		s.Update(&h, batch.Marker{Type: -1})
	}
	f.Add(s.Encode(4), false)
	f.Add(encodeV1(f, s, 4), false)
	s.Update(&batch.Header{ProducerID: 4, BaseSequence: 0, BaseOffset: 4, Attributes: batch.AttrTransactional}, batch.Marker{Type: -1})
	f.Add(s.Encode(5), true)
	f.Add(testState().Encode(42), true)
	f.Add(New().Encode(0), true)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, p []byte, withTxn bool) {
		off, s, err := Decode(p, withTxn)
		if err != nil {
			return
		}
		var again []byte
		if withTxn {
			again = s.Encode(off)
		} else {
			again = encodeV1(t, s, off)
		}
		if !bytes.Equal(again, p) {
			t.Fatalf("accepted\n%x\nre-encodes as\n%x", p, again)
		}
		// The rules on a decoded state, whatever it says: a batch and an
		// abort marker for each producer.
		for _, pr := range allProducers(s) {
			h := batch.Header{ProducerID: pr.ID, ProducerEpoch: pr.Epoch, BaseSequence: 0, BaseOffset: off, MaxTimestamp: off}
			s.Check(&h, batch.Marker{Type: -1})
			s.Update(&h, batch.Marker{Type: -1})
			h = batch.Header{ProducerID: pr.ID, ProducerEpoch: pr.Epoch, BaseSequence: -1, BaseOffset: off + 1, Attributes: batch.AttrControl}
			m := batch.Marker{Type: batch.ControlAbort, CoordinatorEpoch: pr.CoordinatorEpoch}
			s.Check(&h, m)
			if done := s.Update(&h, m); done == nil {
				t.Fatalf("an abort marker of producer %d completed nothing", pr.ID)
			}
			off += 2
		}
		if s.FirstUnstable() != -1 {
			t.Fatalf("first unstable %d after every producer's marker", s.FirstUnstable())
		}
	})
}

func allProducers(s *State) []Producer {
	var out []Producer
	s.Each(func(p Producer) { out = append(out, p) })
	return out
}
