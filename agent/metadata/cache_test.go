package metadata

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestListCacheBuildsOnChange: a Cache of a list rebuilds its value only
// when the list's ETag changes, keeps the old value when a read fails,
// and Changed re-reads at once and announces.
func TestListCacheBuildsOnChange(t *testing.T) {
	forEachBackend(t, func(t *testing.T, inner objstore.Bucket) {
		ctx := context.Background()
		b := objstore.NewFaulty(inner)
		s := New(b, nil)
		builds := 0
		announced := 0
		c := Cache[Listed[int]]{
			Read:     ReadListWith(s, QuotasKey, func(e []string) int { builds++; return len(e) }),
			Announce: func() error { announced++; return errors.New("no gossip") },
		}
		if err := c.Refresh(ctx); err != nil || c.Load().Value != 0 {
			t.Fatalf("empty list: %v, %d", err, c.Load().Value)
		}
		add := func(v string) {
			if _, err := UpdateList(ctx, s, QuotasKey, func(e []string) ([]string, error) { return append(e, v), nil }); err != nil {
				t.Fatal(err)
			}
		}
		add("a")
		c.Changed()
		if c.Load().Value != 1 || announced != 1 {
			t.Fatalf("after Changed: value %d, %d announcements", c.Load().Value, announced)
		}
		before := builds
		for range 3 {
			if err := c.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if builds != before {
			t.Fatalf("%d rebuilds of an unchanged list", builds-before)
		}
		add("b")
		if err := c.Refresh(ctx); err != nil || c.Load().Value != 2 {
			t.Fatalf("after a change: %v, %d", err, c.Load().Value)
		}
		b.FailAlways(objstore.OpGet, nil)
		if err := c.Refresh(ctx); err == nil || c.Load().Value != 2 {
			t.Fatalf("failed read: %v, value %d (want the old 2 kept)", err, c.Load().Value)
		}
	})
}
