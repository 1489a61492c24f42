package control

// Elections (docs/design.md §6 "Election"): state.json is changed only by CAS,
// so of agents electing at once one wins and the others re-read. The
// replication loop (states.go) elects a leader for each local partition
// whose leader is gone; a restarted leader takes over in a new epoch; a
// replica whose disk was lost leaves the ISR.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
)

// electionGrace is how long a starting agent waits before it counts an
// agent it has not heard of as dead: gossip needs a moment to list the
// others, and electing early would take leaderships from live agents.
const electionGrace = 5 * time.Second

// reloadState re-reads p's state and applies it. A state that no longer
// lists this agent is left to the replication loop: dropping the replica
// closes p, which waits for p's fetcher and ISR writers, and this may be
// one of them.
func (c *Controller) reloadState(ctx context.Context, p *partition.Partition) error {
	st, etag, err := c.store.PartitionState(ctx, p.TopicID(), p.Index())
	if err != nil {
		return err
	}
	if !slices.Contains(st.Replicas, c.id) {
		c.refreshState(p)
		return nil
	}
	c.ApplyState(p, st, etag)
	return nil
}

// ApplyState applies a state read from the store to a local partition and
// logs leadership changes.
func (c *Controller) ApplyState(p *partition.Partition, st metadata.PartitionState, etag string) {
	before, _ := p.StateAndETag()
	changed, err := p.ApplyState(st, etag)
	if err != nil {
		c.logger.Warn("partition state not applied", "topic", p.Topic(), "partition", p.Index(), "err", err)
		return
	}
	if changed && before.Leader == c.id && st.Leader != c.id {
		c.host.LeaderMovedAway(p)
	}
	if changed && (before.Leader != st.Leader || before.LeaderEpoch != st.LeaderEpoch) {
		c.logger.Info("partition leadership", "topic", p.Topic(), "partition", p.Index(), "leader", st.Leader,
			"leader_epoch", st.LeaderEpoch, "isr", st.ISR, "role", roleOf(st, c.id))
	}
}

func roleOf(st metadata.PartitionState, self int32) string {
	if st.Leader == self {
		return "leader"
	}
	return "follower"
}

// liveAgents is this agent and every agent gossip lists, less those
// whose dials were refused a moment ago (deaths.go); nil when no agent
// may be counted dead. During the grace period after start gossip may not
// list every live agent yet, so only a refusal counts then: every other
// agent a local partition names counts as alive.
func (c *Controller) liveAgents(now time.Time) map[int32]bool {
	if c.members == nil {
		return nil
	}
	refused := c.deaths.refusedAgents(now)
	live := map[int32]bool{}
	if now.Sub(c.startedAt) < electionGrace {
		if len(refused) == 0 {
			return nil
		}
		for _, t := range c.host.Topics() {
			for _, kp := range t.Partitions {
				if p, ok := kp.(*partition.Partition); ok {
					st, _ := p.StateAndETag()
					for _, r := range st.Replicas {
						live[r] = true
					}
				}
			}
		}
	} else {
		for _, m := range c.members.Members() {
			live[m.ID] = true
		}
	}
	for _, id := range refused {
		delete(live, id)
	}
	live[c.id] = true
	return live
}

// electLeaders takes over every local partition whose leader is dead (or
// that has none) when this agent is the first live ISR member in replica
// order; the CAS makes sure only one agent wins.
func (c *Controller) electLeaders(ctx context.Context, now time.Time) {
	live := c.liveAgents(now)
	if live == nil {
		return
	}
	var ineligible []int32
	for _, t := range c.host.Topics() {
		for _, kp := range t.Partitions {
			p, ok := kp.(*partition.Partition)
			if !ok {
				continue
			}
			st, etag := p.StateAndETag()
			for _, r := range st.Replicas {
				if !live[r] && !slices.Contains(ineligible, r) {
					ineligible = append(ineligible, r)
				}
			}
			if st.Leader == c.id || st.Leader >= 0 && live[st.Leader] {
				continue
			}
			next, ok := electionResult(st, c.id, live, t.Resolved.UncleanLeaderElection)
			if !ok {
				continue
			}
			if err := c.TakeOver(ctx, p, st, next, etag, "leader "+strconv.Itoa(int(st.Leader))+" is not alive"); err != nil {
				c.logger.Warn("leader election", "topic", p.Topic(), "partition", p.Index(), "err", err)
			}
		}
	}
	for _, p := range c.host.Partitions() {
		p.SetIneligible(ineligible)
	}
}

// electionResult is the state in which self leads after st's leader died,
// and whether self is the one to lead: the first live ISR member in
// replica order; with unclean election, else the first live replica. The
// ISR keeps its live members.
func electionResult(st metadata.PartitionState, self int32, live map[int32]bool, unclean bool) (metadata.PartitionState, bool) {
	leader := int32(-1)
	for _, r := range st.Replicas {
		if slices.Contains(st.ISR, r) && live[r] {
			leader = r
			break
		}
	}
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return !live[r] })
	if leader < 0 && unclean {
		for _, r := range st.Replicas {
			if live[r] {
				leader, isr = r, []int32{r}
				break
			}
		}
	}
	if leader != self {
		return metadata.PartitionState{}, false
	}
	next := st
	next.Leader, next.LeaderEpoch, next.StateEpoch = self, st.LeaderEpoch+1, st.StateEpoch+1
	next.Replicas, next.ISR = slices.Clone(st.Replicas), isr
	return next, true
}

// TakeOver writes next (this agent leading in a new epoch) over st with a
// CAS and applies the outcome: the new state when it won, the stored one
// when another agent changed it first.
func (c *Controller) TakeOver(ctx context.Context, p *partition.Partition, st, next metadata.PartitionState, etag, why string) error {
	newETag, err := c.store.CASPartitionState(ctx, p.TopicID(), p.Index(), next, etag)
	if errors.Is(err, metadata.ErrConflict) {
		return c.reloadState(ctx, p)
	}
	if err != nil {
		return fmt.Errorf("take over %s-%d: %w", p.Topic(), p.Index(), err)
	}
	c.logger.Info("took over partition leadership", "topic", p.Topic(), "partition", p.Index(), "leader_epoch", next.LeaderEpoch,
		"previous_leader", st.Leader, "isr", next.ISR, "why", why)
	c.metrics.elections.Inc()
	c.ApplyState(p, next, newETag)
	c.announceState(Key{p.TopicID(), p.Index()}, next.StateEpoch)
	return nil
}

// LeaveISRLostDisk is the start of an agent that lost its copy of p (its
// directory is gone: a wiped or replaced disk) while the store still lists
// it in the ISR beside others. Its log is empty, or restored to the
// bucket's end, so it must neither lead (the records acknowledged above
// the bucket would be truncated from every follower) nor count as in
// sync: it leaves the ISR, handing leadership, if it held it, to the
// first other ISR member in replica order in a new epoch. Every ISR member
// holds every acknowledged record. If that agent is down too, the usual
// election moves on from there; this one rejoins the ISR once it has
// copied the partition again, as any follower does.
func (c *Controller) LeaveISRLostDisk(ctx context.Context, p *partition.Partition, st metadata.PartitionState, etag string) error {
	for attempt := 0; ; attempt++ {
		next := st
		next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return r == c.id })
		next.StateEpoch = st.StateEpoch + 1
		if st.Leader == c.id {
			i := slices.IndexFunc(st.Replicas, func(r int32) bool { return slices.Contains(next.ISR, r) })
			next.Leader, next.LeaderEpoch = st.Replicas[i], st.LeaderEpoch+1
		}
		newETag, err := c.store.CASPartitionState(ctx, p.TopicID(), p.Index(), next, etag)
		if errors.Is(err, metadata.ErrConflict) && attempt < 5 {
			if st, etag, err = c.store.PartitionState(ctx, p.TopicID(), p.Index()); err != nil {
				return fmt.Errorf("lost disk: re-read %s-%d: %w", p.Topic(), p.Index(), err)
			}
			if !slices.Contains(st.ISR, c.id) || len(st.ISR) == 1 {
				c.ApplyState(p, st, etag)
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("lost disk: leave the ISR of %s-%d: %w", p.Topic(), p.Index(), err)
		}
		c.logger.Warn("this agent's copy of the partition is gone (its directory is missing): it leaves the ISR until it has copied the partition again",
			"topic", p.Topic(), "partition", p.Index(), "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR)
		c.partMetrics.ISRChanged("shrink")
		c.ApplyState(p, next, newETag)
		c.announceState(Key{p.TopicID(), p.Index()}, next.StateEpoch)
		return nil
	}
}
