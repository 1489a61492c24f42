package diskless

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestSharesSplitOnePutByBytes: an object's one PUT is split among its
// topics in proportion to their bytes in it, whatever partitions hold
// them, and the shares add up to the PUT.
func TestSharesSplitOnePutByBytes(t *testing.T) {
	runOf := func(topic [16]byte, partition int32, sizes ...int64) *run {
		r := &run{key: partKey{topic, partition}}
		for _, s := range sizes {
			r.batches = append(r.batches, &pending{size: s})
		}
		return r
	}
	for _, tc := range []struct {
		name string
		runs []*run
		want map[[16]byte]topicShare
	}{
		{"one topic", []*run{runOf(topicA, 0, 100, 50)},
			map[[16]byte]topicShare{topicA: {150, 1}}},
		{"two topics, one of them in two partitions", []*run{runOf(topicA, 0, 100, 200), runOf(topicB, 3, 100), runOf(topicA, 1, 200)},
			map[[16]byte]topicShare{topicA: {500, 5.0 / 6}, topicB: {100, 1.0 / 6}}},
		{"equal bytes", []*run{runOf(topicA, 0, 7), runOf(topicB, 0, 7)},
			map[[16]byte]topicShare{topicA: {7, 0.5}, topicB: {7, 0.5}}},
	} {
		got := shares(tc.runs)
		sum := 0.0
		for _, s := range got {
			sum += s.put
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("%s: shares add up to %v, want one PUT", tc.name, sum)
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: shares %v, want %v", tc.name, got, tc.want)
		}
		for id, w := range tc.want {
			if g := got[id]; g.bytes != w.bytes || math.Abs(g.put-w.put) > 1e-12 {
				t.Errorf("%s: topic %x: %+v, want %+v", tc.name, id[0], g, w)
			}
		}
	}
}

// TestWriterCountsTopicsAtCut: the objects a writer cuts are counted
// under each topic's name (or its id in hex when the namer does not
// know it), each object's PUT split by bytes, and the topics' shares add
// up to the objects stored.
func TestWriterCountsTopicsAtCut(t *testing.T) {
	a0, a1, b := testBatch(t, -1, 0, "a-zero, the longer one"), testBatch(t, -1, 0, "a-one"), testBatch(t, -1, 0, "b")
	cfg := testConfig()
	cfg.CommitBytes = int64(len(a0) + len(a1) + len(b)) // the first object is cut as b fills it
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), newFakeCommitter())
	w.NameTopics(func(id [16]byte) (string, bool) { return "orders", id == topicA })

	first := []func(context.Context) (Result, error){add(t, w, topicA, 0, a0), add(t, w, topicA, 1, a1), add(t, w, topicB, 0, b)}
	for _, wait := range first {
		committed(t, wait)
	}
	second := add(t, w, topicA, 0, a0) // an object of orders alone, cut by Drain
	drain(t, w)
	committed(t, second)

	hexB := fmt.Sprintf("%x", topicB)
	aBytes, bBytes := float64(len(a0)+len(a1)), float64(len(b))
	wantA := aBytes/(aBytes+bBytes) + 1
	wantB := bBytes / (aBytes + bBytes)
	m := w.metrics
	if got := testutil.ToFloat64(m.topicBytes.WithLabelValues("orders")); got != aBytes+float64(len(a0)) {
		t.Errorf("orders: %v bytes, want %v", got, aBytes+float64(len(a0)))
	}
	if got := testutil.ToFloat64(m.topicBytes.WithLabelValues(hexB)); got != bBytes {
		t.Errorf("unnamed topic: %v bytes under %s, want %v", got, hexB, bBytes)
	}
	putsA, putsB := testutil.ToFloat64(m.topicPuts.WithLabelValues("orders")), testutil.ToFloat64(m.topicPuts.WithLabelValues(hexB))
	if math.Abs(putsA-wantA) > 1e-9 || math.Abs(putsB-wantB) > 1e-9 {
		t.Errorf("PUT shares: orders %v, %s %v; want %v and %v", putsA, hexB, putsB, wantA, wantB)
	}
	if objects := testutil.ToFloat64(m.uploaded); objects != 2 || math.Abs(putsA+putsB-objects) > 1e-9 {
		t.Errorf("the topics' PUT shares add up to %v, the writer stored %v objects; want 2", putsA+putsB, objects)
	}
}
