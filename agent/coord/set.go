package coord

import (
	"fmt"
	"sync"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/group"
)

// ledPartition is what a set reads of the partition a coordinator is loaded
// from (*partition.Partition).
type ledPartition interface {
	Index() int32
	Leader() int32
	LeaderEpoch() int32
	// CommittedEpochStart reports whether the high watermark reached
	// what the previous leader committed.
	CommittedEpochStart() bool
}

// set holds the loaded coordinators of one internal topic (group
// coordinators of __consumer_offsets, transaction coordinators of
// __transaction_state), one per partition led here, each with the leader
// epoch it was loaded at (package comment, "Load and unload").
type set[C interface{ Close() }] struct {
	topic     string
	self      int32 // this agent's id
	errClosed error // what lookups return once close has run

	mu     sync.Mutex // guards byPart and closed; held while a partition loads
	byPart map[int32]loadedAt[C]
	closed bool
}

type loadedAt[C any] struct {
	c     C
	epoch int32
}

func newSet[C interface{ Close() }](topic string, self int32, errClosed error) *set[C] {
	return &set[C]{topic: topic, self: self, errClosed: errClosed}
}

// get returns the coordinator of p, which must be led here, calling load
// (with the lock held, so a partition loads once) when none is loaded at
// p's current leader epoch. A coordinator loaded at an earlier epoch is
// closed first.
func (s *set[C]) get(p ledPartition, load func(epoch int32) (C, error)) (C, error) {
	var none C
	if p.Leader() != s.self {
		return none, fmt.Errorf("%w: %s-%d is led by agent %d", dataplane.ErrNotCoordinator, s.topic, p.Index(), p.Leader())
	}
	epoch := p.LeaderEpoch()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return none, s.errClosed
	}
	if l, ok := s.byPart[p.Index()]; ok {
		if l.epoch == epoch && !closedItself(l.c) {
			return l.c, nil
		}
		l.c.Close()
		delete(s.byPart, p.Index())
	}
	if !p.CommittedEpochStart() {
		// A new leader's HW has not yet reached what the previous leader
		// committed: replaying now could miss its last records.
		return none, fmt.Errorf("%w: %s-%d waits for its followers", group.ErrLoading, s.topic, p.Index())
	}
	c, err := load(epoch)
	if err != nil {
		return none, err
	}
	if s.byPart == nil {
		s.byPart = map[int32]loadedAt[C]{}
	}
	s.byPart[p.Index()] = loadedAt[C]{c, epoch}
	return c, nil
}

// closedItself reports whether c closed itself without an unload (a
// batch coordinator whose append failed): its memory may be ahead of its
// log, so it is loaded again from the log.
func closedItself(c any) bool {
	s, ok := c.(interface{ Closed() bool })
	return ok && s.Closed()
}

// loaded returns the coordinator of partition index, if one is loaded.
func (s *set[C]) loaded(index int32) (C, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.byPart[index]
	return l.c, ok
}

// all returns the loaded coordinators; with epochs, only those loaded at
// the epoch it gives their partition.
func (s *set[C]) all(epochs map[int32]int32) []C {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]C, 0, len(s.byPart))
	for index, l := range s.byPart {
		if epoch, ok := epochs[index]; epochs == nil || ok && epoch == l.epoch {
			out = append(out, l.c)
		}
	}
	return out
}

// unload stops the coordinator of a partition this agent no longer leads
// and reports whether one was loaded. The coordinator is closed outside
// the lock: a transaction coordinator's Close waits for its marker
// writers.
func (s *set[C]) unload(index int32) bool {
	s.mu.Lock()
	l, ok := s.byPart[index]
	delete(s.byPart, index)
	s.mu.Unlock()
	if ok {
		l.c.Close()
	}
	return ok
}

// close stops every coordinator; later lookups fail with errClosed.
func (s *set[C]) close() {
	s.mu.Lock()
	s.closed = true
	was := s.byPart
	s.byPart = nil
	s.mu.Unlock()
	for _, l := range was {
		l.c.Close()
	}
}
