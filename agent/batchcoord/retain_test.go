package batchcoord

import (
	"context"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/coordlog"
	"github.com/strata-streaming/strata/agent/log/batch"
)

// cleaned is what the log cleaner leaves of l: the newest record of each
// key, in the order of those records, without tombstones.
func cleaned(t *testing.T, l *memLog) *memLog {
	t.Helper()
	type kept struct {
		key, value []byte
	}
	var order []string
	last := map[string]kept{}
	err := coordlog.Replay(l, func(h batch.Header, raw []byte) error {
		recs, err := coordlog.Records(raw)
		for _, r := range recs {
			k := string(r.Key)
			if _, ok := last[k]; ok {
				order = append(order[:indexOf(order, k)], order[indexOf(order, k)+1:]...)
			}
			order = append(order, k)
			last[k] = kept{r.Key, r.Value}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := &memLog{}
	for _, k := range order {
		if last[k].value == nil {
			continue
		}
		raw, err := batch.Build(batch.DefaultBuildOptions(), []batch.Record{{Key: last[k].key, Value: last[k].value}})
		if err != nil {
			t.Fatal(err)
		}
		if err := out.Append(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestRetention: the expired prefix and the bytes over the limit leave
// the index, with their Runs, durably; a reload, and a reload of the
// cleaned log, find the same log start, batches and producer state.
func TestRetention(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	commit(t, c, 1, idem(tp0, 0, 0, 1), idem(tp0, 10, 1, 1), plain(tp1, 0, 1)) // tp0 offsets 0, 1 (timestamps 1000, 1010)
	commit(t, c, 2, idem(tp0, 100, 2, 1))                                      // offset 2, timestamp 1100
	commit(t, c, 3, idem(tp0, 200, 3, 1))                                      // offset 3, timestamp 1200

	if at, ok := c.RetentionPoint(tp0, 1150, 100, -1); !ok || at != 2 {
		t.Fatalf("time retention point (%d, %v), want 2", at, ok)
	}
	if at, ok := c.RetentionPoint(tp0, 0, -1, 100); !ok || at != 3 {
		t.Fatalf("bytes retention point (%d, %v), want 3", at, ok)
	}
	if _, ok := c.RetentionPoint(tp0, 0, -1, -1); ok {
		t.Fatal("no limits, yet a retention point")
	}
	if err := c.Retain(context.Background(), tp0, 2); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Coordinator{"live": c, "reloaded": load(t, l, 2, nil), "cleaned": load(t, cleaned(t, l), 2, nil)} {
		v, _, err := c.Read(tp0, 2, 1<<20)
		if err != nil || v.LogStart != 2 || v.CompactedEnd != 2 || v.HighWatermark != 4 || len(v.Batches) != 2 || v.Batches[0].Position != 100 {
			t.Fatalf("%s: %+v, %v", name, v, err)
		}
		if v, _, _ := c.Read(tp1, 0, 1); v.HighWatermark != 1 || v.LogStart != 0 {
			t.Fatalf("%s: the other partition moved: %+v", name, v)
		}
		// The producer state survived: a retry of the first batch is
		// still a duplicate, and the next sequence is accepted.
		res := commit(t, c, 4, idem(tp0, 0, 0, 1), idem(tp0, 300, 4, 1))
		if !res[0].Duplicate || res[0].BaseOffset != 0 || res[1].Err != nil || res[1].BaseOffset != 4 {
			t.Fatalf("%s: after retention %+v", name, res)
		}
	}
}

// TestRetainEverything: a log start at the high watermark empties the
// index, and commits continue from there.
func TestRetainEverything(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	commit(t, c, 1, plain(tp0, 0, 3))
	if err := c.Retain(context.Background(), tp0, 3); err != nil {
		t.Fatal(err)
	}
	c = load(t, cleaned(t, l), 1, nil)
	if res := commit(t, c, 2, plain(tp0, 0, 1)); res[0].BaseOffset != 3 {
		t.Fatalf("after retaining everything: %+v, want offset 3", res[0])
	}
	if v, _, _ := c.Read(tp0, 3, 1<<20); v.LogStart != 3 || v.HighWatermark != 4 || len(v.Batches) != 1 {
		t.Fatalf("%+v", v)
	}
}

// TestCompactionPlanAndCompacted: the plan ends at the first Run
// boundary past the segment size, or takes everything once the oldest
// batch is old enough; Compacted moves the index's start there, keeps
// the log start, and survives reloads of the log, cleaned or not.
func TestCompactionPlanAndCompacted(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	commit(t, c, 1, plain(tp0, 0, 1))                   // offset 0, 100 bytes
	commit(t, c, 2, plain(tp0, 0, 2), plain(tp1, 0, 1)) // offset 1-2
	commit(t, c, 3, idem(tp0, 0, 0, 1))                 // offset 3
	plan := c.CompactionPlan(tp0, 150, 0)
	if len(plan) != 2 || plan[1].LastOffset != 2 {
		t.Fatalf("plan %+v, want the first two Runs", plan)
	}
	if plan := c.CompactionPlan(tp0, 1<<30, 0); plan != nil {
		t.Fatalf("nothing due, yet a plan of %d batches", len(plan))
	}
	if plan := c.CompactionPlan(tp0, 1<<30, time.Now().Add(time.Hour).UnixMilli()); len(plan) != 3 {
		t.Fatalf("old enough: a plan of %d batches, want all 3", len(plan))
	}
	if err := c.Compacted(context.Background(), tp0, 2); err == nil {
		t.Fatal("compacted to the middle of a Run")
	}
	if err := c.Compacted(context.Background(), tp0, 3); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Coordinator{"live": c, "reloaded": load(t, l, 2, nil), "cleaned": load(t, cleaned(t, l), 2, nil)} {
		v, _, err := c.Read(tp0, 3, 1<<20)
		if err != nil || v.LogStart != 0 || v.CompactedEnd != 3 || v.HighWatermark != 4 || len(v.Batches) != 1 {
			t.Fatalf("%s: %+v, %v", name, v, err)
		}
		if v, _, _ := c.Read(tp0, 1, 1<<20); len(v.Batches) != 0 || v.CompactedEnd != 3 {
			t.Fatalf("%s: a read below the compacted end found %+v", name, v)
		}
		if res := commit(t, c, 9, idem(tp0, 0, 0, 1)); !res[0].Duplicate || res[0].BaseOffset != 3 {
			t.Fatalf("%s: producer state lost: %+v", name, res[0])
		}
	}
}
