package batch

import (
	"errors"
	"testing"
)

func TestMarkerRoundTrip(t *testing.T) {
	for _, m := range []Marker{{Type: ControlCommit, CoordinatorEpoch: 7}, {Type: ControlAbort, CoordinatorEpoch: 0}} {
		raw, err := BuildMarker(42, 3, m, 1000)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Check(raw)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != -1 {
			t.Fatalf("marker header %+v", h)
		}
		got, err := ParseMarker(raw)
		if err != nil || got != m {
			t.Fatalf("ParseMarker = %+v, %v; want %+v", got, err, m)
		}
	}
}

func TestParseMarkerRefusesDataBatches(t *testing.T) {
	opts := DefaultBuildOptions()
	raw, err := Build(opts, []Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMarker(raw); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a data batch parsed as a marker: %v", err)
	}
	opts.Attributes = AttrControl | AttrTransactional
	raw, err = Build(opts, []Record{{Key: []byte{0}, Value: nil}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMarker(raw); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("a control record with a 1-byte key: %v", err)
	}
}
