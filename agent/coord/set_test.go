package coord

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/group"
)

// fakePartition is a partition of an internal topic as a set reads it.
type fakePartition struct {
	index, leader, epoch int32
	caughtUp             bool // CommittedEpochStart
}

func (p *fakePartition) Index() int32              { return p.index }
func (p *fakePartition) Leader() int32             { return p.leader }
func (p *fakePartition) LeaderEpoch() int32        { return p.epoch }
func (p *fakePartition) CommittedEpochStart() bool { return p.caughtUp }

// fakeCoordinator records its load epoch and whether it was closed.
type fakeCoordinator struct {
	partition, epoch int32
	closed           atomic.Int32 // Close calls
}

func (c *fakeCoordinator) Close() { c.closed.Add(1) }

var errClosedForTest = errors.New("coord test: closed")

const self = 1

// loader counts loads and fails them while fail is set.
type loader struct {
	loads atomic.Int32
	fail  error
}

func (l *loader) get(s *set[*fakeCoordinator], p *fakePartition) (*fakeCoordinator, error) {
	return s.get(p, func(epoch int32) (*fakeCoordinator, error) {
		l.loads.Add(1)
		if l.fail != nil {
			return nil, l.fail
		}
		return &fakeCoordinator{partition: p.index, epoch: epoch}, nil
	})
}

func TestSetLoadsOncePerLeaderEpoch(t *testing.T) {
	s := newSet[*fakeCoordinator]("__consumer_offsets", self, errClosedForTest)
	var l loader
	p := &fakePartition{index: 3, leader: self, epoch: 7, caughtUp: true}

	first, err := l.get(s, p)
	if err != nil || first.epoch != 7 {
		t.Fatalf("first get: %+v, %v; want loaded at epoch 7", first, err)
	}
	again, err := l.get(s, p)
	if err != nil || again != first || l.loads.Load() != 1 {
		t.Fatalf("second get at the same epoch: %p (first %p), %v, %d loads; want the same coordinator, one load", again, first, err, l.loads.Load())
	}
	if c, ok := s.loaded(3); !ok || c != first {
		t.Fatalf("loaded(3) = %p, %v; want %p", c, ok, first)
	}

	// Another agent led the partition in between: the memory is stale.
	p.epoch = 9
	next, err := l.get(s, p)
	if err != nil || next == first || next.epoch != 9 || l.loads.Load() != 2 {
		t.Fatalf("get at a new epoch: %+v, %v, %d loads; want a new coordinator at epoch 9", next, err, l.loads.Load())
	}
	if n := first.closed.Load(); n != 1 {
		t.Errorf("the coordinator of the old epoch was closed %d times, want once", n)
	}
}

func TestSetRefusesWhatItCannotLoad(t *testing.T) {
	errReplay := errors.New("replay failed")
	for _, tc := range []struct {
		name string
		p    fakePartition
		fail error
		want error
	}{
		{"led elsewhere", fakePartition{index: 0, leader: 2, epoch: 1, caughtUp: true}, nil, dataplane.ErrNotCoordinator},
		{"waits for its followers", fakePartition{index: 0, leader: self, epoch: 1}, nil, group.ErrLoading},
		{"load fails", fakePartition{index: 0, leader: self, epoch: 1, caughtUp: true}, errReplay, errReplay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSet[*fakeCoordinator]("__transaction_state", self, errClosedForTest)
			l := loader{fail: tc.fail}
			c, err := l.get(s, &tc.p)
			if !errors.Is(err, tc.want) || c != nil {
				t.Fatalf("get: %v, %v; want %v", c, err, tc.want)
			}
			if _, ok := s.loaded(0); ok {
				t.Error("a coordinator is kept after a refused get")
			}
			if tc.want != errReplay && l.loads.Load() != 0 {
				t.Errorf("%d loads, want none", l.loads.Load())
			}
		})
	}
}

func TestSetNamesThePartitionInItsErrors(t *testing.T) {
	s := newSet[*fakeCoordinator]("__consumer_offsets", self, errClosedForTest)
	var l loader
	_, err := l.get(s, &fakePartition{index: 4, leader: 2})
	if want := fmt.Sprintf("%v: __consumer_offsets-4 is led by agent 2", dataplane.ErrNotCoordinator); err == nil || err.Error() != want {
		t.Errorf("led elsewhere: %v, want %q", err, want)
	}
	_, err = l.get(s, &fakePartition{index: 4, leader: self})
	if want := fmt.Sprintf("%v: __consumer_offsets-4 waits for its followers", group.ErrLoading); err == nil || err.Error() != want {
		t.Errorf("not caught up: %v, want %q", err, want)
	}
}

func TestSetUnload(t *testing.T) {
	s := newSet[*fakeCoordinator]("__consumer_offsets", self, errClosedForTest)
	var l loader
	p := &fakePartition{index: 1, leader: self, epoch: 2, caughtUp: true}
	c, err := l.get(s, p)
	if err != nil {
		t.Fatal(err)
	}
	if !s.unload(1) {
		t.Fatal("unload of a loaded coordinator reported none")
	}
	if c.closed.Load() != 1 {
		t.Error("unload did not close the coordinator")
	}
	if s.unload(1) || s.unload(5) {
		t.Error("unload of a partition with no coordinator reported one")
	}
	// Led here again (at the same epoch, as a test may arrange): loaded anew.
	if again, err := l.get(s, p); err != nil || again == c || l.loads.Load() != 2 {
		t.Errorf("get after unload: %p (unloaded %p), %v, %d loads; want a second load", again, c, err, l.loads.Load())
	}
}

func TestSetAllFiltersByEpoch(t *testing.T) {
	s := newSet[*fakeCoordinator]("__consumer_offsets", self, errClosedForTest)
	var l loader
	for i := range int32(3) {
		if _, err := l.get(s, &fakePartition{index: i, leader: self, epoch: 10 + i, caughtUp: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(s.all(nil)); got != 3 {
		t.Errorf("all(nil): %d coordinators, want 3", got)
	}
	// Partition 0 is current, 1 was loaded at an older epoch, 2 is no
	// longer led here.
	got := s.all(map[int32]int32{0: 10, 1: 12})
	if len(got) != 1 || got[0].partition != 0 {
		t.Errorf("all(current): %v, want partition 0's alone", got)
	}
}

func TestSetClose(t *testing.T) {
	s := newSet[*fakeCoordinator]("__consumer_offsets", self, errClosedForTest)
	var l loader
	var loaded []*fakeCoordinator
	for i := range int32(2) {
		c, err := l.get(s, &fakePartition{index: i, leader: self, epoch: 1, caughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, c)
	}
	s.close()
	for _, c := range loaded {
		if c.closed.Load() != 1 {
			t.Errorf("partition %d's coordinator closed %d times, want once", c.partition, c.closed.Load())
		}
	}
	if _, err := l.get(s, &fakePartition{index: 0, leader: self, epoch: 1, caughtUp: true}); !errors.Is(err, errClosedForTest) {
		t.Errorf("get after close: %v, want the closed error", err)
	}
	if s.unload(0) || len(s.all(nil)) != 0 {
		t.Error("coordinators remain after close")
	}
	s.close() // twice is harmless
}

// TestSetLoadsOnceUnderConcurrentGets: the requests that all find a
// partition unloaded share one load.
func TestSetLoadsOnceUnderConcurrentGets(t *testing.T) {
	s := newSet[*fakeCoordinator]("__consumer_offsets", self, errClosedForTest)
	var l loader
	p := &fakePartition{index: 0, leader: self, epoch: 1, caughtUp: true}
	var wg sync.WaitGroup
	got := make([]*fakeCoordinator, 16)
	for i := range got {
		wg.Go(func() {
			c, err := l.get(s, p)
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	if l.loads.Load() != 1 {
		t.Errorf("%d loads, want 1", l.loads.Load())
	}
	for _, c := range got {
		if c != got[0] {
			t.Fatal("concurrent gets returned different coordinators")
		}
	}
}
