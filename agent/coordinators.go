package agent

import (
	"fmt"
	"sync"

	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/partition"
)

// coordinators holds the loaded coordinators of one internal topic (group
// coordinators of __consumer_offsets, transaction coordinators of
// __transaction_state), one per partition led here. A coordinator is
// loaded (its partition replayed) by the first request that needs it, and
// remembers the leader epoch it was loaded at: after another agent led the
// partition in between, its memory is stale and it is loaded again.
type coordinators[C interface{ Close() }] struct {
	mu     sync.Mutex // guards byPart; held while a partition loads
	byPart map[int32]loadedCoordinator[C]
	closed bool
}

type loadedCoordinator[C any] struct {
	c     C
	epoch int32
}

// get returns the coordinator of p, which must be led here, calling load
// (with the lock held, so a partition loads once) when none is loaded at
// p's current leader epoch. closed is the error once close has run.
func (cs *coordinators[C]) get(p *partition.Partition, self int32, topic string, closed error, load func(epoch int32) (C, error)) (C, error) {
	var none C
	if p.Leader() != self {
		return none, fmt.Errorf("%w: %s-%d is led by agent %d", kafka.ErrNotCoordinator, topic, p.Index(), p.Leader())
	}
	epoch := p.LeaderEpoch()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return none, closed
	}
	if l, ok := cs.byPart[p.Index()]; ok {
		if l.epoch == epoch {
			return l.c, nil
		}
		l.c.Close()
		delete(cs.byPart, p.Index())
	}
	if !p.CommittedEpochStart() {
		// A new leader's HW has not yet reached what the previous leader
		// committed: replaying now could miss its last records.
		return none, fmt.Errorf("%w: %s-%d waits for its followers", group.ErrLoading, topic, p.Index())
	}
	c, err := load(epoch)
	if err != nil {
		return none, err
	}
	if cs.byPart == nil {
		cs.byPart = map[int32]loadedCoordinator[C]{}
	}
	cs.byPart[p.Index()] = loadedCoordinator[C]{c, epoch}
	return c, nil
}

// loaded returns the coordinator of partition index, if one is loaded.
func (cs *coordinators[C]) loaded(index int32) (C, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	l, ok := cs.byPart[index]
	return l.c, ok
}

// all returns the loaded coordinators; with epochs, only those loaded at
// the epoch it gives their partition.
func (cs *coordinators[C]) all(epochs map[int32]int32) []C {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]C, 0, len(cs.byPart))
	for index, l := range cs.byPart {
		if epoch, ok := epochs[index]; epochs == nil || ok && epoch == l.epoch {
			out = append(out, l.c)
		}
	}
	return out
}

// unload stops the coordinator of a partition this agent no longer leads
// and reports whether one was loaded.
func (cs *coordinators[C]) unload(index int32) bool {
	cs.mu.Lock()
	l, ok := cs.byPart[index]
	delete(cs.byPart, index)
	cs.mu.Unlock()
	if ok {
		l.c.Close()
	}
	return ok
}

// close stops every coordinator; later lookups fail.
func (cs *coordinators[C]) close() {
	cs.mu.Lock()
	cs.closed = true
	loaded := cs.byPart
	cs.byPart = nil
	cs.mu.Unlock()
	for _, l := range loaded {
		l.c.Close()
	}
}
