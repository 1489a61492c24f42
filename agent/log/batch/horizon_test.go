package batch

import "testing"

// A delete horizon moves baseTimestamp and sets the flag, and nothing a
// reader sees changes: record timestamps, offsets, producer fields, the
// marker itself.
func TestWithDeleteHorizon(t *testing.T) {
	raw, err := BuildMarker(42, 3, Marker{Type: ControlAbort, CoordinatorEpoch: 9}, 5000)
	if err != nil {
		t.Fatal(err)
	}
	before, recsBefore, err := Records(raw, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before.DeleteHorizon(); ok {
		t.Fatal("a new marker has a delete horizon")
	}
	out, err := WithDeleteHorizon(raw, 90_000)
	if err != nil {
		t.Fatal(err)
	}
	h, recs, err := Records(out, 0)
	if err != nil {
		t.Fatalf("stamped batch does not verify: %v", err)
	}
	if got, ok := h.DeleteHorizon(); !ok || got != 90_000 {
		t.Fatalf("delete horizon %d (%v), want 90000", got, ok)
	}
	if h.ProducerID != 42 || h.ProducerEpoch != 3 || h.MaxTimestamp != before.MaxTimestamp ||
		h.LastOffsetDelta != before.LastOffsetDelta || !h.IsControl() || !h.IsTransactional() {
		t.Fatalf("header changed: %+v, was %+v", h, before)
	}
	if len(recs) != 1 || h.BaseTimestamp+recs[0].TimestampDelta != before.BaseTimestamp+recsBefore[0].TimestampDelta {
		t.Fatalf("record timestamp moved: %+v", recs)
	}
	if m, err := ParseMarker(out); err != nil || m.Type != ControlAbort || m.CoordinatorEpoch != 9 {
		t.Fatalf("marker %+v, %v", m, err)
	}
	if _, err := WithDeleteHorizon(out, 1); err == nil {
		t.Fatal("a second horizon was accepted")
	}
}
