package control

// The balancer (docs/design.md §8): one agent at a time, the holder of the
// "balancer" lease in the store, computes target replica sets with
// placement.PlaceByLoad (--rebalance-by load, the partitions' loads from
// load.go) or placement.Place (count) once membership has been stable for
// --rebalance-settle. With --auto-leader-rebalance it first hands
// leadership back to each partition's preferred (first) replica. A target
// that only reorders a partition's replicas is written at once, with the
// new first replica leading: no data moves. The others it writes as
// reassignments (reassign.go), at most --rebalance-max-moves in flight,
// which the partitions' leaders carry out. A holder that dies loses the
// lease after its term; the next one continues from the states in the
// store.

import (
	"context"
	"errors"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

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

// busyRound is the wait between balancer rounds while there is work:
// membership settling, or moves in flight. A move that completes frees a
// slot for the next within about this, rather than a lease renewal
// period later, so a join reaches its share in a few seconds.
const busyRound = time.Second

// balancerLoop runs balancer rounds until the agent stops: every
// LeaseTerm/3, or every busyRound while BalanceOnce reports work.
func (c *Controller) balancerLoop(stop context.Context) {
	t := time.NewTimer(LeaseTerm / 3)
	defer t.Stop()
	for {
		select {
		case <-stop.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), LeaseTerm/2)
		busy := c.BalanceOnce(ctx, time.Now())
		cancel()
		if busy {
			t.Reset(busyRound)
		} else {
			t.Reset(LeaseTerm / 3)
		}
	}
}

// BalanceOnce is one round: renew or take the lease, then, if held and
// membership has settled, start moves and leader elections. It reports
// whether this agent holds the lease and has work soon: membership still
// settling, or moves in flight.
func (c *Controller) BalanceOnce(ctx context.Context, now time.Time) (busy bool) {
	if !c.cfg.AutoRebalance && !c.cfg.AutoLeaderRebalance {
		return false
	}
	c.roundMu.Lock()
	defer c.roundMu.Unlock()
	// Alone, an agent has nothing to balance; renewing the lease every
	// round would cost a PUT each (about 800,000 a month) for nothing.
	// It still cancels moves to agents that left (moves.go): when the
	// agent a move was adding a replica on was its only peer, nobody else
	// would, and it writes only when there is one to cancel.
	if !c.hasPeers() {
		c.cancelMovesToGone(ctx, now)
		return false
	}
	if !c.holdLease(ctx, now) {
		// Absences this agent saw while it held the lease are stale by
		// the time it holds it again: the agent may have come back and
		// left since. The next term counts afresh.
		c.forgetAbsences()
		return false
	}
	// Moves to agents that left have their own grace, counted from when
	// each agent left: waiting for membership to settle as well would
	// hold them for as long as other agents keep coming and going.
	c.cancelMovesToGone(ctx, now)
	lost := c.trackLost(now)
	// A draining agent is waiting to leave: its moves start at once.
	settled := now.Sub(time.Unix(0, c.membersChangedAt.Load())) >= c.cfg.RebalanceSettle || c.someoneDraining()
	if !settled {
		return true
	}
	live := c.ActiveAgents()
	if len(live) == 0 {
		return false
	}
	// Leadership first: it moves no data.
	if c.cfg.AutoLeaderRebalance {
		c.electPreferred(ctx, live)
	}
	if c.cfg.AutoRebalance {
		busy = c.startMoves(ctx, live, lost, now)
	}
	return busy
}

// holdLease takes or renews the balancer lease. A round within
// LeaseTerm/3 of the last renewal does not renew again: busy rounds come
// every busyRound, and each renewal is a PUT.
func (c *Controller) holdLease(ctx context.Context, now time.Time) bool {
	if !c.leaseRenewed.IsZero() && now.Sub(c.leaseRenewed) >= 0 && now.Sub(c.leaseRenewed) < LeaseTerm/3 {
		return true
	}
	_, held, err := c.store.AcquireLease(ctx, balancerLease, c.id, now, LeaseTerm)
	if err != nil {
		c.logger.Warn("balancer lease", "err", err)
	}
	if held {
		c.leaseRenewed = now
	} else {
		c.leaseRenewed = time.Time{}
	}
	return held
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

// stateRef names a served partition for the balancer's writes.
type stateRef struct {
	topic   string
	topicID [16]byte
	index   int32
	// unclean is the topic's unclean.leader.election.enable.
	unclean bool
}

// appliedState is a served partition's state as this agent applied it.
type appliedState struct {
	ref   stateRef
	state metadata.PartitionState
}

// appliedStates are every served partition's applied state, in topic
// order. Diskless topics have none: no replicas to place, move or elect.
func (c *Controller) appliedStates() []appliedState {
	var out []appliedState
	for _, t := range c.host.Topics() {
		if t.Resolved.Diskless {
			continue
		}
		for _, p := range t.Partitions {
			out = append(out, appliedState{stateRef{t.Name, t.ID, p.Index(), t.Resolved.UncleanLeaderElection}, partition.StateOf(p)})
		}
	}
	return out
}

// placementInput is every partition's applied state, as Place wants it.
// Partitions that are moving, or have a replica on an agent that is down
// or still joining (perhaps restarting), are fixed: moving them would copy
// data for what may be a short absence. Only a draining agent's replicas
// move off it, and a lost one's (lost.go): those of a partition whose
// leader is lost only once another replica leads it, or, when every
// replica is lost, by unclean replacement where the topic allows it.
// (Treating joining like draining once moved an agent's replicas away,
// and back, because its "active" announcement reached the balancer late.)
//
// loads (nil: none) gives each partition its Load (withLoads).
func (c *Controller) placementInput(lost map[int32]bool, loads map[Key]placement.Load) ([]placement.Partition, []appliedState) {
	settled := map[int32]bool{} // active or draining
	if self := c.members.Self(); self.State != membership.StateJoining {
		settled[c.id] = true
	}
	for _, m := range c.members.Members() {
		if m.State == membership.StateActive || m.State == membership.StateDraining {
			settled[m.ID] = true
		}
	}
	states := c.appliedStates()
	parts := make([]placement.Partition, 0, len(states))
	for _, as := range states {
		st := as.state
		// A partition led by a lost agent waits for an election (a live
		// replica takes over), or, with no live replica left, for an
		// unclean replacement where the topic allows one.
		replaceable := headless(st, lost) && as.ref.unclean
		fixed := st.Moving() || (st.Leader < 0 || lost[st.Leader]) && !replaceable
		for _, r := range st.Replicas {
			fixed = fixed || !settled[r] && !lost[r]
		}
		replicas := st.Replicas
		if st.Moving() {
			// Counted where it is going: counting the old and new
			// replicas together made the next round see the new
			// agent as fuller than it will be, and overshoot.
			replicas = st.Target
		}
		parts = append(parts, placement.Partition{Topic: as.ref.topic, Index: as.ref.index, Replicas: replicas,
			ReplicationFactor: st.WantedReplicas(), Fixed: fixed})
	}
	if loads != nil {
		refs := make([]stateRef, len(states))
		for i, as := range states {
			refs[i] = as.ref
		}
		withLoads(parts, refs, loads)
	}
	return parts, states
}

// place is the balancer's placement: by load or by counts.
func (c *Controller) place(live []placement.Agent, parts []placement.Partition) [][]int32 {
	if c.cfg.RebalanceByLoad {
		return placement.PlaceByLoad(live, parts, c.cfg.LoadBalance)
	}
	return placement.Place(live, parts)
}

// startMoves writes reassignments towards the placement, keeping at most
// RebalanceMaxMoves in flight, and reports whether moves are in flight
// or left to start.
func (c *Controller) startMoves(ctx context.Context, live []placement.Agent, lost map[int32]bool, now time.Time) bool {
	var loads map[Key]placement.Load
	if c.cfg.RebalanceByLoad {
		loads = c.partitionLoads(ctx, now)
	}
	parts, states := c.placementInput(lost, loads)
	moving := 0
	for _, as := range states {
		if as.state.Moving() {
			moving++
		}
	}
	if !c.placementChanges(live, parts) {
		return moving > 0
	}
	// This agent's view of other agents' partitions may lag (a missed
	// broadcast waits for the reconcile interval); planning moves on it
	// overshot. Re-read every state before deciding, which costs a GET
	// per partition: only when a slot is free, and, in busy rounds, only
	// once a move has completed since the last re-read (or LeaseTerm/3
	// has passed).
	if moving >= c.cfg.RebalanceMaxMoves {
		return true
	}
	if moving >= c.lastMoving && now.Sub(c.lastRefresh) < LeaseTerm/3 && now.Sub(c.lastRefresh) >= 0 {
		return true
	}
	c.RefreshStates(ctx, true)
	c.lastRefresh = now
	defer func() { c.lastMoving = moving }()
	parts, states = c.placementInput(lost, loads)
	inFlight := 0
	perAgent := map[int32]int{} // replicas each agent is receiving
	for _, as := range states {
		if st := as.state; st.Moving() {
			inFlight++
			for _, r := range st.Adding {
				perAgent[r]++
			}
		}
	}
	moving = inFlight
	targets := c.place(live, parts)
	// Leaderships before copies: a target that only reorders replicas
	// is written at once and takes no move slot, and so is one that only
	// drops replicas (a drain with no agent to take them) and keeps its
	// in-sync ones: neither copies a byte, and a drain of thousands of
	// partitions must not queue behind the copy limits.
	var reorders, shrinks []int
	shrunk := make([]bool, len(targets))
	for i, target := range targets {
		switch {
		case parts[i].Fixed || slices.Equal(target, parts[i].Replicas):
		case sameReplicas(target, parts[i].Replicas):
			reorders = append(reorders, i)
		case shrinkable(states[i].state, target):
			shrinks = append(shrinks, i)
			shrunk[i] = true
		}
	}
	c.inParallel(len(reorders), func(j int) {
		i := reorders[j]
		c.reorder(ctx, states[i].ref, targets[i], live)
	})
	c.inParallel(len(shrinks), func(j int) {
		i := shrinks[j]
		c.shrink(ctx, states[i].ref, parts[i].Replicas, targets[i])
	})
	for i, target := range targets {
		if inFlight >= c.cfg.RebalanceMaxMoves {
			moving = inFlight
			return true
		}
		if parts[i].Fixed || sameReplicas(target, parts[i].Replicas) || shrunk[i] {
			continue
		}
		ref := states[i].ref
		if headless(states[i].state, lost) {
			// No leader to carry a move out (lost.go).
			if err := c.replaceHeadless(ctx, ref, lost, target); err != nil {
				c.logger.Warn("balancer: replace the replicas of a partition whose agents are all lost", "topic", ref.topic, "partition", ref.index, "err", err)
			}
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
		err := c.Reassign(ctx, ref.topic, ref.index, target, false)
		if err != nil {
			c.logger.Warn("balancer: start move", "topic", ref.topic, "partition", ref.index, "target", target, "err", err)
			continue
		}
		inFlight++
		moving = inFlight
		for _, r := range adding {
			perAgent[r]++
		}
		c.metrics.movesStarted.Inc()
		c.logger.Info("balancer: move started", "topic", ref.topic, "partition", ref.index, "from", parts[i].Replicas, "to", target)
	}
	return true
}

// placementChanges reports whether the placement would change any
// partition's replicas or their order.
func (c *Controller) placementChanges(live []placement.Agent, parts []placement.Partition) bool {
	for i, target := range c.place(live, parts) {
		if !parts[i].Fixed && !slices.Equal(target, parts[i].Replicas) {
			return true
		}
	}
	return false
}

// sameReplicas reports whether a and b hold the same agents, in any order.
func sameReplicas(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, r := range a {
		if !slices.Contains(b, r) {
			return false
		}
	}
	return true
}

// reorder writes target, a new order of a partition's replicas, and with
// --auto-leader-rebalance hands leadership to its first replica at once
// (reorderState).
func (c *Controller) reorder(ctx context.Context, ref stateRef, target []int32, live []placement.Agent) {
	ids := make([]int32, 0, len(live))
	for _, l := range live {
		ids = append(ids, l.ID)
	}
	var before metadata.PartitionState
	next, err := c.changeState(ctx, ref.topicID, ref.index, func(cur metadata.PartitionState) (metadata.PartitionState, error) {
		before = cur
		return reorderState(cur, target, ids, c.cfg.AutoLeaderRebalance), nil
	})
	if err != nil {
		c.logger.Warn("balancer: reorder replicas", "topic", ref.topic, "partition", ref.index, "target", target, "err", err)
		return
	}
	if next.StateEpoch == before.StateEpoch {
		return // nothing written: the state changed meanwhile
	}
	c.metrics.leadershipMoves.Inc()
	c.logger.Info("balancer: preferred leader changed", "topic", ref.topic, "partition", ref.index,
		"from", before.Replicas, "to", next.Replicas, "leader", next.Leader, "leader_epoch", next.LeaderEpoch)
}

// stateWriteParallelism bounds the partition states the balancer and a
// drain write at once: each is a GET and a conditional PUT to the store,
// which serves them side by side, and a drain of thousands of partitions
// done one after another would outlast a pod's grace period.
const stateWriteParallelism = 16

// inParallel calls fn(0) to fn(n-1), stateWriteParallelism at a time, and
// returns when all have.
func (c *Controller) inParallel(n int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(stateWriteParallelism)
	for i := range n {
		g.Go(func() error { fn(i); return nil })
	}
	g.Wait()
}

// shrinkable reports whether target only drops replicas of st, which is
// not moving, and keeps in-sync ones only: the move then completes the
// moment it starts (shrinkState).
func shrinkable(st metadata.PartitionState, target []int32) bool {
	_, ok := shrinkState(st, target)
	return ok
}

// shrinkState is st on target, a subset of its in-sync replicas, in one
// step: a reassignment started and completed at once, so a removed leader
// hands over to the first target replica in a new epoch as a completed
// move does. ok is false when target adds a replica, keeps one out of
// sync, or st is moving.
func shrinkState(st metadata.PartitionState, target []int32) (metadata.PartitionState, bool) {
	if st.Moving() || len(target) == 0 || len(target) >= len(st.Replicas) {
		return st, false
	}
	for _, r := range target {
		if !slices.Contains(st.Replicas, r) || !slices.Contains(st.ISR, r) {
			return st, false
		}
	}
	moving, err := st.Reassign(target, len(st.Replicas))
	if err != nil {
		return st, false
	}
	done, ok := moving.CompleteReassignment()
	if !ok {
		return st, false
	}
	done.StateEpoch = st.StateEpoch + 1 // one write, one epoch
	// The factor stays what it was, so the balancer grows the partition
	// back once agents are there (a state written before the factor was
	// kept would otherwise take the smaller set as its factor).
	done.ReplicationFactor = int32(st.WantedReplicas())
	return done, true
}

// shrink writes target, a subset of a partition's in-sync replicas
// (shrinkState), if the stored state still allows it; a replica it drops
// leaves when its agent applies the state.
func (c *Controller) shrink(ctx context.Context, ref stateRef, from, target []int32) {
	next, err := c.changeState(ctx, ref.topicID, ref.index, func(cur metadata.PartitionState) (metadata.PartitionState, error) {
		next, _ := shrinkState(cur, target)
		return next, nil
	})
	if err != nil {
		c.logger.Warn("balancer: drop replicas", "topic", ref.topic, "partition", ref.index, "target", target, "err", err)
		return
	}
	if !slices.Equal(next.Replicas, target) {
		return // nothing written: the state changed meanwhile; the next round decides again
	}
	c.metrics.movesStarted.Inc()
	c.metrics.movesDone.Inc()
	c.logger.Info("balancer: replicas dropped", "topic", ref.topic, "partition", ref.index, "from", from, "to", target,
		"leader", next.Leader, "leader_epoch", next.LeaderEpoch)
}

// reorderState is st with its replicas in target's order, and, when lead
// is set and target's first replica is live, in sync and not leading,
// that replica leading in a new epoch (as preferredLeaderState). It
// returns st unchanged when st is moving or target is not a new order of
// st's replicas.
func reorderState(st metadata.PartitionState, target, live []int32, lead bool) metadata.PartitionState {
	if st.Moving() || !sameReplicas(st.Replicas, target) || slices.Equal(st.Replicas, target) {
		return st
	}
	next := st
	next.Replicas = slices.Clone(target)
	next.StateEpoch = st.StateEpoch + 1
	if pref := target[0]; lead && st.Leader != pref && slices.Contains(st.ISR, pref) && slices.Contains(live, pref) {
		next.Leader, next.LeaderEpoch = pref, st.LeaderEpoch+1
	}
	return next
}

// electPreferred hands leadership to each partition's first replica where
// it is live, in sync and not leading (Kafka's auto.leader.rebalance).
func (c *Controller) electPreferred(ctx context.Context, live []placement.Agent) {
	ids := make([]int32, 0, len(live))
	for _, l := range live {
		ids = append(ids, l.ID)
	}
	_, states := c.placementInput(nil, nil)
	for _, as := range states {
		st := as.state
		if st.Moving() || len(st.Replicas) == 0 || st.Leader == st.Replicas[0] || st.Leader < 0 {
			continue
		}
		if _, err := preferredLeaderState(st, ids); err != nil {
			continue
		}
		err := c.ElectPreferredLeader(ctx, as.ref.topic, as.ref.index)
		if err != nil && !errors.Is(err, dataplane.ErrElectionNotNeeded) {
			c.logger.Warn("balancer: preferred leader election", "topic", as.ref.topic, "partition", as.ref.index, "err", err)
		}
	}
}
