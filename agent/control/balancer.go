package control

// The balancer (docs/design.md §8): one agent at a time, the holder of the
// "balancer" lease in the store, computes target replica sets with
// placement.Place once membership has been stable for --rebalance-settle,
// and writes them as reassignments (reassign.go), at most
// --rebalance-max-moves in flight. The partitions' leaders carry the moves
// out. With --auto-leader-rebalance it also hands leadership back to each
// partition's preferred (first) replica. A holder that dies loses the lease
// after its term; the next one continues from the states in the store.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/membership"

	"github.com/strata-streaming/strata/agent/placement"
)

const (
	balancerLease = "balancer"
	// LeaseTerm is how long a lease lasts without renewal; the holder
	// renews it every balancer round (LeaseTerm/3).
	LeaseTerm = 10 * time.Second
)

// balancerLoop runs balancer rounds until the agent stops.
func (c *Controller) balancerLoop(stop context.Context) {
	t := time.NewTicker(LeaseTerm / 3)
	defer t.Stop()
	for {
		select {
		case <-stop.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), LeaseTerm/2)
		c.BalanceOnce(ctx, time.Now())
		cancel()
	}
}

// BalanceOnce is one round: renew or take the lease, then, if held and
// membership has settled, start moves and leader elections.
func (c *Controller) BalanceOnce(ctx context.Context, now time.Time) {
	if !c.cfg.AutoRebalance && !c.cfg.AutoLeaderRebalance {
		return
	}
	// Alone, an agent has nothing to balance; renewing the lease every
	// round would cost a PUT each (about 800,000 a month) for nothing.
	// It still cancels moves to agents that left (moves.go): when the
	// agent a move was adding a replica on was its only peer, nobody else
	// would, and it writes only when there is one to cancel.
	if !c.hasPeers() {
		c.cancelMovesToGone(ctx, now)
		return
	}
	_, held, err := c.store.AcquireLease(ctx, balancerLease, c.id, now, LeaseTerm)
	if err != nil {
		c.logger.Warn("balancer lease", "err", err)
	}
	if !held {
		// Absences this agent saw while it held the lease are stale by
		// the time it holds it again: the agent may have come back and
		// left since. The next term counts afresh.
		c.forgetAbsences()
		return
	}
	// Moves to agents that left have their own grace, counted from when
	// each agent left: waiting for membership to settle as well would
	// hold them for as long as other agents keep coming and going.
	c.cancelMovesToGone(ctx, now)
	// A draining agent is waiting to leave: its moves start at once.
	settled := now.Sub(time.Unix(0, c.membersChangedAt.Load())) >= c.cfg.RebalanceSettle || c.someoneDraining()
	if !settled {
		return
	}
	live := c.ActiveAgents()
	if len(live) == 0 {
		return
	}
	if c.cfg.AutoRebalance {
		c.startMoves(ctx, live)
	}
	if c.cfg.AutoLeaderRebalance {
		c.electPreferred(ctx, live)
	}
}

// hasPeers reports whether gossip lists any agent but this one.
func (c *Controller) hasPeers() bool {
	if c.members == nil {
		return false
	}
	return slices.ContainsFunc(c.members.Members(), func(m membership.Member) bool { return m.ID != c.id })
}

// someoneDraining reports whether a live agent (this one included) is
// draining.
func (c *Controller) someoneDraining() bool {
	if c.draining.Load() {
		return true
	}
	for _, m := range c.members.Members() {
		if m.State == membership.StateDraining {
			return true
		}
	}
	return false
}

// ActiveAgents are the live agents that may take replicas: gossip's
// members in state active (not joining, not draining), and this agent if
// it is active.
func (c *Controller) ActiveAgents() []placement.Agent {
	var out []placement.Agent
	if c.members == nil {
		return out
	}
	if self := c.members.Self(); self.State == membership.StateActive {
		out = append(out, placement.Agent{ID: self.ID, Rack: self.Rack})
	}
	for _, m := range c.members.Members() {
		if m.State == membership.StateActive && m.ID != c.id {
			out = append(out, placement.Agent{ID: m.ID, Rack: m.Rack})
		}
	}
	return out
}

// placementInput is every partition's applied state, as Place wants it.
// Partitions that are moving, or have a replica on an agent that is down
// or still joining (perhaps restarting), are fixed: moving them would copy
// data for what may be a short absence. Only a draining agent's replicas
// move off it. (Treating joining like draining once moved an agent's
// replicas away, and back, because its "active" announcement reached the
// balancer late.)
func (c *Controller) placementInput() ([]placement.Partition, []metadata.PartitionState, []string) {
	settled := map[int32]bool{} // active or draining
	if self := c.members.Self(); self.State != membership.StateJoining {
		settled[c.id] = true
	}
	for _, m := range c.members.Members() {
		if m.State == membership.StateActive || m.State == membership.StateDraining {
			settled[m.ID] = true
		}
	}
	var parts []placement.Partition
	var states []metadata.PartitionState
	var topics []string
	for _, t := range c.host.Topics() {
		for _, p := range t.Partitions {
			st := partition.StateOf(p)
			fixed := st.Moving() || st.Leader < 0
			for _, r := range st.Replicas {
				fixed = fixed || !settled[r]
			}
			replicas := st.Replicas
			if st.Moving() {
				// Counted where it is going: counting the old and new
				// replicas together made the next round see the new
				// agent as fuller than it will be, and overshoot.
				replicas = st.Target
			}
			parts = append(parts, placement.Partition{Topic: t.Name, Index: p.Index(), Replicas: replicas,
				ReplicationFactor: st.WantedReplicas(), Fixed: fixed})
			states = append(states, st)
			topics = append(topics, t.Name)
		}
	}
	return parts, states, topics
}

// startMoves writes reassignments towards the placement, keeping at most
// RebalanceMaxMoves in flight.
func (c *Controller) startMoves(ctx context.Context, live []placement.Agent) {
	parts, _, _ := c.placementInput()
	if !placementChanges(live, parts) {
		return
	}
	// This agent's view of other agents' partitions may lag (a missed
	// broadcast waits for the reconcile interval); planning moves on it
	// overshot. Re-read every state before deciding, which costs GETs
	// only when something is to move.
	c.RefreshStates(ctx, true)
	parts, states, topics := c.placementInput()
	inFlight := 0
	perAgent := map[int32]int{} // replicas each agent is receiving
	for _, st := range states {
		if st.Moving() {
			inFlight++
			for _, r := range st.Adding {
				perAgent[r]++
			}
		}
	}
	targets := placement.Place(live, parts)
	for i, target := range targets {
		if inFlight >= c.cfg.RebalanceMaxMoves {
			return
		}
		if parts[i].Fixed || slices.Equal(target, parts[i].Replicas) {
			continue
		}
		// A receiving agent copies at most a few tails at once, so moves
		// onto one new agent do not starve each other.
		var adding []int32
		for _, r := range target {
			if !slices.Contains(parts[i].Replicas, r) {
				adding = append(adding, r)
			}
		}
		if slices.ContainsFunc(adding, func(r int32) bool { return perAgent[r] >= c.cfg.RebalanceMaxMovesPerAgent }) {
			continue
		}
		err := c.Reassign(ctx, topics[i], parts[i].Index, target, false)
		if err != nil {
			c.logger.Warn("balancer: start move", "topic", topics[i], "partition", parts[i].Index, "target", target, "err", err)
			continue
		}
		inFlight++
		for _, r := range adding {
			perAgent[r]++
		}
		c.metrics.movesStarted.Inc()
		c.logger.Info("balancer: move started", "topic", topics[i], "partition", parts[i].Index, "from", parts[i].Replicas, "to", target)
	}
}

// placementChanges reports whether Place would move any replica.
func placementChanges(live []placement.Agent, parts []placement.Partition) bool {
	for i, target := range placement.Place(live, parts) {
		if !parts[i].Fixed && !slices.Equal(target, parts[i].Replicas) {
			return true
		}
	}
	return false
}

// electPreferred hands leadership to each partition's first replica where
// it is live, in sync and not leading (Kafka's auto.leader.rebalance).
func (c *Controller) electPreferred(ctx context.Context, live []placement.Agent) {
	ids := make([]int32, 0, len(live))
	for _, l := range live {
		ids = append(ids, l.ID)
	}
	parts, states, topics := c.placementInput()
	for i, st := range states {
		if st.Moving() || len(st.Replicas) == 0 || st.Leader == st.Replicas[0] || st.Leader < 0 {
			continue
		}
		if _, err := preferredLeaderState(st, ids); err != nil {
			continue
		}
		err := c.ElectPreferredLeader(ctx, topics[i], parts[i].Index)
		if err != nil && !errors.Is(err, dataplane.ErrElectionNotNeeded) {
			c.logger.Warn("balancer: preferred leader election", "topic", topics[i], "partition", parts[i].Index, "err", err)
		}
	}
}
