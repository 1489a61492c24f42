package group

// Reconciliation moves one KIP-848 member from what it holds towards its
// target, as Kafka's coordinator does:
//
//   - A member that must give partitions up first keeps its epoch and is
//     told only what it keeps (state UnrevokedPartitions); partitions it
//     gives up stay held by it until a heartbeat shows it no longer owns
//     them, or its rebalance timeout fences it.
//   - Then it moves to the assignment epoch and gets every partition of its
//     target that nobody else holds; the rest come on later heartbeats, as
//     their previous holders release them (UnreleasedPartitions).
//
// So a partition is never held by two members at once.

import (
	"bytes"
	"maps"
	"slices"
	"time"
)

type memberState int

const (
	memberStable memberState = iota
	memberUnrevoked
	memberUnreleased
)

func (s memberState) String() string {
	return [...]string{"Stable", "UnrevokedPartitions", "UnreleasedPartitions"}[s]
}

// topicPart is one partition, by topic id.
type topicPart struct {
	topic     [16]byte
	partition int32
}

// partSet is a set of partitions.
type partSet map[topicPart]struct{}

// Assignment lists partitions by topic id, each list sorted.
type Assignment map[[16]byte][]int32

func (a Assignment) set() partSet {
	s := partSet{}
	for id, ps := range a {
		for _, p := range ps {
			s[topicPart{id, p}] = struct{}{}
		}
	}
	return s
}

func (s partSet) assignment() Assignment {
	a := Assignment{}
	for tp := range s {
		a[tp.topic] = append(a[tp.topic], tp.partition)
	}
	for id := range a {
		slices.Sort(a[id])
	}
	return a
}

func (s partSet) clone() partSet { return maps.Clone(s) }

func (s partSet) has(tp topicPart) bool { _, ok := s[tp]; return ok }

func (s partSet) subsetOf(o partSet) bool {
	for tp := range s {
		if !o.has(tp) {
			return false
		}
	}
	return true
}

func (s partSet) equal(o partSet) bool { return len(s) == len(o) && s.subsetOf(o) }

// sorted returns the partitions ordered by topic id, then partition.
func (s partSet) sorted() []topicPart {
	return slices.SortedFunc(maps.Keys(s), func(a, b topicPart) int {
		if c := bytes.Compare(a.topic[:], b.topic[:]); c != 0 {
			return c
		}
		return int(a.partition) - int(b.partition)
	})
}

// reconcileLocked advances m towards its target. owned is what the member
// reported owning (nil: not reported in this heartbeat).
func (c *Coordinator) reconcileLocked(g *groupState, m *cmember, owned Assignment) {
	cg := g.cg
	if m.state == memberUnrevoked {
		if owned == nil || len(owned.set().intersect(m.revoking)) > 0 {
			return // still revoking
		}
	} else if m.state == memberStable && m.epoch == cg.assignmentEpoch {
		return
	}
	target := cg.target[m.id]
	keep, revoke, assignable, pending := partSet{}, partSet{}, partSet{}, 0
	for tp := range m.assigned {
		if target.has(tp) {
			keep[tp] = struct{}{}
		} else {
			revoke[tp] = struct{}{}
		}
	}
	for tp := range target {
		if keep.has(tp) {
			continue
		}
		if holder, held := cg.holders[tp]; held && holder != m.id {
			pending++
		} else {
			assignable[tp] = struct{}{}
		}
	}
	switch {
	case len(revoke) > 0:
		// Each new revocation gets a whole rebalance timeout, as in Kafka.
		if m.state != memberUnrevoked || !revoke.equal(m.revoking) {
			c.startRevokeTimerLocked(g, m)
		}
		m.state = memberUnrevoked
		c.setHoldingsLocked(cg, m, keep, revoke)
		return
	case pending > 0:
		m.state = memberUnreleased
	default:
		m.state = memberStable
	}
	stopTimer(&m.revokeBy)
	if m.epoch != cg.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, cg.assignmentEpoch
	}
	for tp := range assignable {
		keep[tp] = struct{}{}
		m.assignedAt[tp] = m.epoch
	}
	for tp := range m.assignedAt {
		if !keep.has(tp) {
			delete(m.assignedAt, tp)
		}
	}
	c.setHoldingsLocked(cg, m, keep, partSet{})
}

// setHoldingsLocked records what m is assigned and still revoking.
func (c *Coordinator) setHoldingsLocked(cg *consumerGroup, m *cmember, assigned, revoking partSet) {
	for tp := range m.assigned {
		delete(cg.holders, tp)
	}
	for tp := range m.revoking {
		delete(cg.holders, tp)
	}
	m.assigned, m.revoking = assigned, revoking
	for tp := range assigned {
		cg.holders[tp] = m.id
	}
	for tp := range revoking {
		cg.holders[tp] = m.id
	}
}

// startRevokeTimerLocked fences m if it has not given up its revoked
// partitions within its rebalance timeout, so others can have them.
func (c *Coordinator) startRevokeTimerLocked(g *groupState, m *cmember) {
	c.armLocked(&m.revokeBy, max(m.rebalanceTimeout, time.Second), g, func() {
		if g.cg != nil && g.cg.members[m.id] == m && m.state == memberUnrevoked {
			c.removeConsumerMemberLocked(g, m, "did not revoke its partitions within the rebalance timeout")
		}
	})
}

func (s partSet) intersect(o partSet) partSet {
	out := partSet{}
	for tp := range s {
		if o.has(tp) {
			out[tp] = struct{}{}
		}
	}
	return out
}
