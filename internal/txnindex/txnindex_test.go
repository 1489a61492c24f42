package txnindex

import (
	"errors"
	"slices"
	"testing"
)

func TestRoundTripAndChecks(t *testing.T) {
	entries := []Entry{{7, 10, 12, 11}, {8, 5, 20, 21}}
	b := Encode(entries)
	if len(b) != 2*EntrySize {
		t.Fatalf("%d bytes", len(b))
	}
	got, err := Decode(b, 10, 30)
	if err != nil || !slices.Equal(got, entries) {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	for name, bad := range map[string][]byte{
		"torn":            b[:EntrySize+3],
		"marker outside":  Encode([]Entry{{7, 1, 40, 41}}),
		"out of order":    Encode([]Entry{{7, 1, 20, 21}, {8, 1, 15, 21}}),
		"first past last": Encode([]Entry{{7, 19, 18, 21}}),
		"version":         append([]byte{0, 1}, b[2:EntrySize]...),
	} {
		if _, err := Decode(bad, 10, 30); !errors.Is(err, ErrBad) {
			t.Errorf("%s: %v, want ErrBad", name, err)
		}
	}
}

// Collect keeps what overlaps [from, upper) and stops at the first entry
// whose last stable offset reaches upper.
func TestCollect(t *testing.T) {
	idx := []Entry{
		{1, 0, 4, 5},   // before from
		{2, 3, 9, 10},  // overlaps
		{3, 12, 30, 8}, // overlaps; an older transaction was still open
		{4, 40, 41, 42},
		{5, 50, 51, 52},
	}
	got, complete := Collect(nil, idx, 5, 35)
	if want := idx[1:3]; !slices.Equal(got, want) || !complete {
		t.Fatalf("Collect = %+v, %v; want %+v, complete", got, complete, want)
	}
	if _, complete := Collect(nil, idx[:3], 5, 100); complete {
		t.Fatal("complete before any entry reached upper")
	}
}
