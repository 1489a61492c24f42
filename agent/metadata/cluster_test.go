package metadata

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestInitClusterIdempotent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		ids := make([]string, 6)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				var err error
				if ids[i], err = New(b, nil).InitCluster(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		again, err := s.InitCluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != 22 {
			t.Fatalf("cluster id %q is %d characters, want 22", again, len(again))
		}
		for i, id := range ids {
			if id != again {
				t.Fatalf("caller %d got cluster id %q, later call %q", i, id, again)
			}
		}
	})
}

func TestRegisterAgent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		for want := range int32(3) {
			info := AgentInfo{KafkaAddr: "h:9092", HTTPAddr: "h:9644", Rack: "r" + string(rune('a'+want))}
			id, err := s.RegisterAgent(ctx, info)
			if err != nil || id != want {
				t.Fatalf("registration %d got id %d, %v", want, id, err)
			}
		}
		a, err := s.Agent(ctx, 1)
		if err != nil || a.ID != 1 || a.Rack != "rb" || a.KafkaAddr != "h:9092" || a.HTTPAddr != "h:9644" || a.RegisteredAt.IsZero() {
			t.Fatalf("Agent(1) = %+v, %v", a, err)
		}
		if _, err := s.Agent(ctx, 9); !errors.Is(err, ErrUnknownAgent) {
			t.Fatalf("Agent(9) = %v, want ErrUnknownAgent", err)
		}
		// A gap (an id registered out of band) is filled first.
		if err := b.Delete(ctx, agentKey(1)); err != nil {
			t.Fatal(err)
		}
		if id, err := s.RegisterAgent(ctx, AgentInfo{}); err != nil || id != 1 {
			t.Fatalf("registration into the gap = %d, %v; want 1", id, err)
		}
		all, err := s.Agents(ctx)
		if err != nil || len(all) != 3 || all[0].ID != 0 || all[2].ID != 2 {
			t.Fatalf("Agents = %+v, %v", all, err)
		}
	})
}

func TestRegisterAgentConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		const n = 10
		ids := make([]int32, n)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				var err error
				if ids[i], err = s.RegisterAgent(ctx, AgentInfo{KafkaAddr: "x"}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		slices.Sort(ids)
		for i, id := range ids {
			if id != int32(i) {
				t.Fatalf("ids = %v, want 0..%d each once", ids, n-1)
			}
		}
	})
}

// checkDisjoint verifies that the blocks tile [0, total) exactly.
func checkDisjoint(t *testing.T, blocks [][2]int64) {
	t.Helper()
	slices.SortFunc(blocks, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	next := int64(0)
	for _, bl := range blocks {
		if bl[0] != next {
			t.Fatalf("block [%d, %d) does not start at %d: overlap or gap", bl[0], bl[0]+bl[1], next)
		}
		next = bl[0] + bl[1]
	}
}

func TestReserveProducerIDsConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b objstore.Bucket) {
		ctx := testContext(t)
		s := newTestStore(t, b)
		rng := seededRand(t)
		const workers, each = 8, 6
		sizes := make([][]int64, workers)
		for w := range sizes {
			for range each {
				sizes[w] = append(sizes[w], 1+rng.Int64N(1000))
			}
		}
		var mu sync.Mutex
		var blocks [][2]int64
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for _, n := range sizes[w] {
					first, err := s.ReserveProducerIDs(ctx, n)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					blocks = append(blocks, [2]int64{first, n})
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(blocks) != workers*each {
			t.Fatalf("%d blocks, want %d", len(blocks), workers*each)
		}
		checkDisjoint(t, blocks)
	})
}

// Two processes' worth of Stores over one fs directory, each with its own
// bucket handle, never hand out overlapping blocks.
func TestReserveProducerIDsTwoStoresOneDir(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	var stores []*Store
	for range 2 {
		b, err := objstore.NewFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		stores = append(stores, newTestStore(t, b))
	}
	var mu sync.Mutex
	var blocks [][2]int64
	var wg sync.WaitGroup
	for i := range 6 {
		s := stores[i%2]
		wg.Go(func() {
			for range 8 {
				first, err := s.ReserveProducerIDs(ctx, 10)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				blocks = append(blocks, [2]int64{first, 10})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(blocks) != 48 {
		t.Fatalf("%d blocks, want 48", len(blocks))
	}
	checkDisjoint(t, blocks)
}

func TestReserveProducerIDsLimits(t *testing.T) {
	ctx := testContext(t)
	b := objstore.NewMem()
	s := newTestStore(t, b)
	for _, n := range []int64{0, -1, s.settings.MaxProducerIDBlock + 1} {
		if _, err := s.ReserveProducerIDs(ctx, n); err == nil {
			t.Errorf("ReserveProducerIDs(%d) succeeded", n)
		}
	}
	near := encodeObject(producerIDsObject{Version: objectVersion, NextProducerID: 1<<63 - 5})
	if _, err := b.Put(ctx, producerIDsKey, near, objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveProducerIDs(ctx, 10); !errors.Is(err, ErrProducerIDsExhausted) {
		t.Fatalf("reserve past int64 = %v, want ErrProducerIDsExhausted", err)
	}
	// Running out of retries is a conflict, not a hang.
	fb := objstore.NewFaulty(b)
	fb.FailAlways(objstore.OpPut, objstore.ErrPreconditionFailed)
	few := testSettings()
	few.CASRetries = 3
	s2, err := NewWithSettings(fb, nil, few)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.ReserveProducerIDs(ctx, 1); !errors.Is(err, ErrConflict) {
		t.Fatalf("reserve with every CAS lost = %v, want ErrConflict", err)
	}
}

// TestLease: one holder at a time; the holder renews; another takes an
// expired lease; a racing second taker loses.
func TestLease(t *testing.T) {
	s := newTestStore(t, objstore.NewMem())
	ctx := testContext(t)
	now := time.Unix(1000, 0)
	if _, ok, err := s.AcquireLease(ctx, "balancer", 1, now, 10*time.Second); err != nil || !ok {
		t.Fatalf("first acquire: %v %v", ok, err)
	}
	if l, ok, _ := s.AcquireLease(ctx, "balancer", 2, now.Add(5*time.Second), 10*time.Second); ok || l.Holder != 1 {
		t.Fatalf("second agent took a live lease: %+v", l)
	}
	if _, ok, _ := s.AcquireLease(ctx, "balancer", 1, now.Add(9*time.Second), 10*time.Second); !ok {
		t.Fatal("the holder could not renew")
	}
	if _, ok, _ := s.AcquireLease(ctx, "balancer", 2, now.Add(15*time.Second), 10*time.Second); ok {
		t.Fatal("taken before the renewed term ended")
	}
	if l, ok, _ := s.AcquireLease(ctx, "balancer", 2, now.Add(20*time.Second), 10*time.Second); !ok || l.Holder != 2 {
		t.Fatalf("expired lease not taken over: %+v", l)
	}
	// A renewal with an older time (a clock stepped back) keeps the term
	// announced: agent 1 may not take the lease before it ends.
	if l, ok, _ := s.AcquireLease(ctx, "balancer", 2, now.Add(2*time.Second), 10*time.Second); !ok || !l.Expires.Equal(now.Add(30*time.Second)) {
		t.Fatalf("renewal with an older time: %+v, %v; want the term to end at +30s still", l, ok)
	}
	if _, ok, _ := s.AcquireLease(ctx, "balancer", 1, now.Add(25*time.Second), 10*time.Second); ok {
		t.Fatal("taken before the term the holder announced ended")
	}
}
