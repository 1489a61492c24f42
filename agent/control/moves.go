package control

// Moves to agents that left (docs/design.md §8, issue 19): a move waits
// until its new replicas join the ISR, and a replica on an agent that has
// left gossip never will, so the move would stay in flight, and the
// partition under-replicated, until someone cancels it. The balancer
// does: a move whose adding replica's agent has been absent from gossip
// for --rebalance-settle is cancelled (the partition goes back to its
// original replicas, their ISR untouched), and the next plan may move the
// partition again, to live agents. The grace keeps a gossip blip (an
// agent suspected, then refuted) from undoing a copy that is nearly done.
// A move onto an agent that drains is cancelled at once: the agent is
// leaving, its drain would wait for the copy, and the balancer would then
// move the replica off it again.
//
// Kafka keeps a reassignment to a dead broker pending until an operator
// cancels it. Strata cancels operator reassignments too: state.json does
// not say who started a move, an agent that left is often gone for good
// (its id is not a fixed broker's), and AlterPartitionReassignments
// refuses targets that are not live in the first place
// (docs/compatibility.md).

import (
	"context"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/membership"
)

// goneMove is a move to cancel: states[Index] waits for a replica on
// Agent, absent from gossip for Absent, or draining.
type goneMove struct {
	Index    int
	Agent    int32
	Absent   time.Duration
	Draining bool
}

// movesToCancel decides which moves wait for a replica on an agent that
// has been absent for at least grace, or that drains: a draining agent is
// leaving, and the balancer would only move the new replica off it again,
// while the drain waits for it (so those are cancelled at once). present
// is the agents gossip lists now (this one included), draining those of
// them that drain; absentSince is when the previous rounds first
// saw each agent absent. It returns the moves to cancel and the absences
// to remember for the next round: those of the adding agents still absent,
// so the map holds no more than the moves in flight name.
func movesToCancel(states []metadata.PartitionState, present, draining map[int32]bool, absentSince map[int32]time.Time,
	now time.Time, grace time.Duration) ([]goneMove, map[int32]time.Time) {
	next := map[int32]time.Time{}
	var cancel []goneMove
	for i, st := range states {
		if !st.Moving() {
			continue
		}
		gone := false
		for _, r := range st.Adding {
			if draining[r] && !gone {
				cancel = append(cancel, goneMove{Index: i, Agent: r, Draining: true})
				gone = true
			}
			if present[r] {
				continue
			}
			since, seen := next[r]
			if !seen {
				since, seen = absentSince[r]
			}
			if !seen {
				since = now // first seen absent in this round
			}
			next[r] = since
			if absent := now.Sub(since); !gone && absent >= grace {
				cancel = append(cancel, goneMove{Index: i, Agent: r, Absent: absent})
				gone = true
			}
		}
	}
	return cancel, next
}

// cancelMovesToGone is the balancer's shell around movesToCancel: it reads
// gossip and the applied states, and cancels each chosen move by CAS
// unless the stored state no longer waits for the gone agent (completed,
// cancelled or re-targeted meanwhile).
func (c *Controller) cancelMovesToGone(ctx context.Context, now time.Time) {
	present := map[int32]bool{c.id: true}
	draining := map[int32]bool{c.id: c.draining.Load()}
	for _, m := range c.members.Members() {
		present[m.ID] = true
		draining[m.ID] = draining[m.ID] || m.State == membership.StateDraining
	}
	applied := c.appliedStates()
	states := make([]metadata.PartitionState, len(applied))
	for i, as := range applied {
		states[i] = as.state
	}
	c.absentMu.Lock()
	cancel, next := movesToCancel(states, present, draining, c.absentSince, now, c.cfg.RebalanceSettle)
	c.absentSince = next
	c.absentMu.Unlock()

	for _, g := range cancel {
		r := applied[g.Index].ref
		cancelled := false
		_, err := c.changeState(ctx, r.topicID, r.index, func(cur metadata.PartitionState) (metadata.PartitionState, error) {
			if !slices.Contains(cur.Adding, g.Agent) {
				return cur, nil // no longer waiting for the gone agent
			}
			next, err := cur.CancelReassignment()
			cancelled = err == nil
			return next, err
		})
		if err != nil {
			c.logger.Warn("balancer: cancel a move to an agent that left or drains", "topic", r.topic, "partition", r.index, "agent", g.Agent, "err", err)
			continue
		}
		if !cancelled {
			continue
		}
		c.metrics.movesCancelled.Inc()
		if g.Draining {
			c.logger.Info("balancer: cancelled a move to an agent that drains", "topic", r.topic, "partition", r.index,
				"agent", g.Agent, "replicas", states[g.Index].Replicas, "target", states[g.Index].Target)
			continue
		}
		c.logger.Info("balancer: cancelled a move to an agent that left", "topic", r.topic, "partition", r.index,
			"agent", g.Agent, "absent_for", g.Absent.Round(time.Millisecond), "replicas", states[g.Index].Replicas, "target", states[g.Index].Target)
	}
}

// forgetAbsences drops what the balancer remembered of absent agents.
func (c *Controller) forgetAbsences() {
	c.absentMu.Lock()
	c.absentSince = nil
	c.absentMu.Unlock()
	c.lostMu.Lock()
	c.lostSince, c.lostLogged = nil, nil
	c.lostMu.Unlock()
}
