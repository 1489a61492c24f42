package tiering

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func entry(base, next, ts int64) Entry {
	return Entry{Base: base, Next: next, Size: 10, MaxTimestamp: ts, Object: fmt.Sprintf("segments/%d", base)}
}

// TestManifestPagesAndLookups: appends spill into immutable pages; lookups
// by offset and by time find the right entry through the pages; a gap is
// refused; an older leader epoch is fenced; truncation drops whole pages.
func TestManifestPagesAndLookups(t *testing.T) {
	ctx := context.Background()
	b := objstore.NewMem()
	m := NewManifest(b, "topics/x/0/", 3)
	for i := range int64(10) {
		if _, err := m.Append(ctx, 1, entry(100+10*i, 110+10*i, 1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	h, _, err := m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Pages) != 3 || len(h.Tail) != 1 || h.StartOffset != 100 || h.Next() != 200 || h.Bytes() != 100 {
		t.Fatalf("head: %d pages, %d tail, start %d, next %d, bytes %d", len(h.Pages), len(h.Tail), h.StartOffset, h.Next(), h.Bytes())
	}
	fresh := NewManifest(b, "topics/x/0/", 3) // no cached pages
	for _, tc := range []struct {
		offset, base int64
		ok           bool
	}{{100, 100, true}, {155, 150, true}, {199, 190, true}, {99, 0, false}, {200, 0, false}} {
		e, ok, err := fresh.Find(ctx, &h, tc.offset)
		if err != nil || ok != tc.ok || ok && e.Base != tc.base {
			t.Errorf("Find(%d) = %d, %v, %v; want %d, %v", tc.offset, e.Base, ok, err, tc.base, tc.ok)
		}
	}
	if e, ok, _ := fresh.FindByTime(ctx, &h, 1004); !ok || e.Base != 140 {
		t.Errorf("FindByTime(1004) = %+v, %v", e, ok)
	}
	if _, ok, _ := fresh.FindByTime(ctx, &h, 5000); ok {
		t.Error("FindByTime past every record found something")
	}
	if _, err := m.Append(ctx, 1, entry(250, 260, 0)); !errors.Is(err, ErrNotContiguous) {
		t.Errorf("gap: %v", err)
	}
	if _, err := m.Append(ctx, 1, entry(150, 200, 0)); !errors.Is(err, ErrNotContiguous) {
		t.Errorf("nothing past the end: %v", err)
	}
	if _, err := m.Append(ctx, 2, entry(200, 210, 2000)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Append(ctx, 1, entry(210, 220, 0)); !errors.Is(err, ErrFenced) {
		t.Errorf("old epoch: %v", err)
	}
	h, dropped, pages, err := m.Truncate(ctx, 2, 165)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 2 || len(dropped) != 6 || h.StartOffset != 165 || len(h.Pages) != 1 {
		t.Fatalf("truncate to 165: %d pages dropped, %d entries, head start %d with %d pages", len(pages), len(dropped), h.StartOffset, len(h.Pages))
	}
	all, err := fresh.All(ctx, &h)
	if err != nil || all[0].Base != 160 || all[len(all)-1].Next != 210 {
		t.Fatalf("All after truncate: %v %v", all, err)
	}
}
