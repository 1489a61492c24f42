package coord

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/txn"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// emptyLog is a partition with nothing in it yet: a coordinator loads
// from it at once.
type emptyLog struct{}

func (emptyLog) Append(context.Context, []byte) error { return nil }
func (emptyLog) Read(int64, int) ([]byte, error)      { return nil, nil }
func (emptyLog) LogStartOffset() int64                { return 0 }
func (emptyLog) HighWatermark() int64                 { return 0 }

// newTestCoordinators are coordinators over a store in memory, without a
// topic table or an agent: enough for producer ids, Unload and Close.
func newTestCoordinators(t *testing.T, block int64, logs *bytes.Buffer) *Coordinators {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	store := metadata.New(objstore.NewMem(), nil)
	return New(self, Config{ProducerIDBlock: block}, nil, nil, store, nil, prometheus.NewRegistry(), logger)
}

// loadBoth loads a group and a transaction coordinator on partition
// index of their topics, as a request would once it found the partition
// led here.
func loadBoth(t *testing.T, c *Coordinators, index int32) (*group.Coordinator, *txn.Coordinator) {
	t.Helper()
	p := &fakePartition{index: index, leader: self, epoch: 1, caughtUp: true}
	g, err := c.groups.get(p, func(int32) (*group.Coordinator, error) {
		return group.Load(t.Context(), index, emptyLog{}, group.DefaultConfig(), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	x, err := c.txns.get(p, func(int32) (*txn.Coordinator, error) {
		return txn.Load(t.Context(), index, emptyLog{}, txn.DefaultConfig(), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	return g, x
}

func TestUnloadGoesByTopic(t *testing.T) {
	var logs bytes.Buffer
	c := newTestCoordinators(t, 10, &logs)
	loadBoth(t, c, 0)
	loadBoth(t, c, 1)

	c.Unload("orders", 0) // not a coordinators' topic
	c.Unload(offsetsTopic, 0)
	if _, ok := c.groups.loaded(0); ok {
		t.Error("the group coordinator of partition 0 is still loaded")
	}
	if _, ok := c.txns.loaded(0); !ok {
		t.Error("unloading __consumer_offsets-0 unloaded __transaction_state-0")
	}
	c.Unload(txnTopic, 1)
	if _, ok := c.txns.loaded(1); ok {
		t.Error("the transaction coordinator of partition 1 is still loaded")
	}
	if got := len(c.GroupCoordinators()) + len(c.TxnCoordinators()); got != 2 {
		t.Errorf("%d coordinators loaded, want 2 (groups 1, transactions 0)", got)
	}
	c.Unload(offsetsTopic, 0) // nothing loaded: nothing logged
	for _, want := range []string{
		`msg="group coordinator unloaded: the partition is led elsewhere" partition=0`,
		`msg="transaction coordinator unloaded: the partition is led elsewhere" partition=1`,
	} {
		if n := strings.Count(logs.String(), want); n != 1 {
			t.Errorf("log %q %d times, want once; logs:\n%s", want, n, logs.String())
		}
	}
}

func TestCloseStopsEveryCoordinator(t *testing.T) {
	c := newTestCoordinators(t, 10, nil)
	g, x := loadBoth(t, c, 0)
	c.Close()
	if _, _, err := g.Describe("g"); !errors.Is(err, group.ErrClosed) {
		t.Errorf("group coordinator after Close: %v, want group.ErrClosed", err)
	}
	if _, err := x.ExpireIDs(t.Context()); !errors.Is(err, txn.ErrClosed) {
		t.Errorf("transaction coordinator after Close: %v, want txn.ErrClosed", err)
	}
	p := &fakePartition{index: 0, leader: self, epoch: 1, caughtUp: true}
	if _, err := c.groups.get(p, nil); !errors.Is(err, group.ErrClosed) {
		t.Errorf("group lookup after Close: %v, want group.ErrClosed", err)
	}
	if _, err := c.txns.get(p, nil); !errors.Is(err, txn.ErrClosed) {
		t.Errorf("transaction lookup after Close: %v, want txn.ErrClosed", err)
	}
	c.Close() // twice is harmless
}

func TestProducerIDsComeInBlocks(t *testing.T) {
	c := newTestCoordinators(t, 3, nil)
	var got []int64
	for range 5 {
		id, err := c.NewProducerID(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("ids %v: want consecutive ids across a block's end", got)
		}
	}

	// Another agent (or this one restarted) on the same store reserves
	// its own block: the rest of this one's is never handed out twice.
	other := New(2, Config{ProducerIDBlock: 3}, nil, nil, c.pids.store, nil, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	id, err := other.NewProducerID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if want := got[0] + 6; id != want {
		t.Errorf("the other agent's first id %d, want %d (after this agent's two blocks)", id, want)
	}
	next, err := c.NewProducerID(t.Context())
	if err != nil || next != got[4]+1 {
		t.Errorf("this agent's next id %d, %v; want %d, the rest of its block", next, err, got[4]+1)
	}
}

func TestProducerIDsUniqueUnderConcurrency(t *testing.T) {
	store := metadata.New(objstore.NewMem(), nil)
	agents := []*Coordinators{
		New(1, Config{ProducerIDBlock: 7}, nil, nil, store, nil, prometheus.NewRegistry(), slog.New(slog.DiscardHandler)),
		New(2, Config{ProducerIDBlock: 7}, nil, nil, store, nil, prometheus.NewRegistry(), slog.New(slog.DiscardHandler)),
	}
	var (
		mu   sync.Mutex
		seen = map[int64]bool{}
		wg   sync.WaitGroup
	)
	for i := range 8 {
		wg.Go(func() {
			for range 20 {
				id, err := agents[i%2].NewProducerID(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("producer id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

func TestProducerIDsReportTheStoreError(t *testing.T) {
	c := newTestCoordinators(t, 0, nil) // a block of 0 ids is refused by the store
	if id, err := c.NewProducerID(t.Context()); err == nil {
		t.Errorf("NewProducerID with a refused block: id %d, want the store's error", id)
	}
}
