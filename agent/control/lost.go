package control

// Lost agents (issue 31): on spot nodes and under autoscalers agents
// vanish without a drain. An agent that holds replicas and has been absent
// from gossip for --replace-dead-agent-after is lost: the balancer stops
// treating its absence as a restart to wait for, and re-places its
// replicas on live agents through the ordinary move path (the partition's
// leader adds the new replica, waits for it to catch up, and drops the
// lost one), bounded and rack-aware as every move. Until then a partition
// with a replica on an absent agent stays fixed, so that a restart does
// not copy data for a short absence.
//
// A partition whose replicas are all on lost agents has no leader to carry
// a move out. With unclean.leader.election.enable the balancer writes its
// new replicas directly, the first one leading in a new leader epoch: that
// replica opens empty and, for a tiered topic, continues where the bucket
// ends, so the records acknowledged after the last upload are lost, as
// with any unclean election (Kafka's, for a replica that was not in
// sync). Without it the partition stays offline until an agent of its
// comes back, as Kafka's does without unclean election.
//
// Absences are counted by the agent that holds the balancer lease, from
// when it first saw each one; a new holder counts afresh, which can only
// delay a replacement. An agent that comes back after its replicas moved
// finds itself in none of their states and drops its copies, as a replica
// moved away does; a later move back starts it empty.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
)

// lostAgents decides which replica holders are lost: absent from gossip
// (not in present) for at least after, counted from absentSince, the
// first rounds that saw each one absent. It returns them and the absences
// to remember for the next round: every replica holder still absent, so
// the map never holds more agents than the states name. after <= 0 turns
// replacement off.
func lostAgents(states []metadata.PartitionState, present map[int32]bool, absentSince map[int32]time.Time,
	now time.Time, after time.Duration) (lost map[int32]bool, next map[int32]time.Time) {
	next = map[int32]time.Time{}
	lost = map[int32]bool{}
	if after <= 0 {
		return lost, next
	}
	for _, st := range states {
		for _, r := range st.Replicas {
			if present[r] {
				continue
			}
			if _, seen := next[r]; seen {
				continue
			}
			since, seen := absentSince[r]
			if !seen {
				since = now
			}
			next[r] = since
			if now.Sub(since) >= after {
				lost[r] = true
			}
		}
	}
	return lost, next
}

// trackLost is the balancer's shell around lostAgents: it reads gossip and
// the applied states and remembers the absences for the next round.
func (c *Controller) trackLost(now time.Time) map[int32]bool {
	present := map[int32]bool{c.id: true}
	for _, m := range c.members.Members() {
		present[m.ID] = true
	}
	var states []metadata.PartitionState
	for _, st := range c.appliedStates() {
		states = append(states, st.state)
	}
	c.lostMu.Lock()
	defer c.lostMu.Unlock()
	lost, next := lostAgents(states, present, c.lostSince, now, c.cfg.ReplaceDeadAgentAfter)
	for id := range lost {
		if !c.lostLogged[id] {
			c.logger.Warn("agent lost: absent from gossip too long; its replicas move to live agents",
				"agent", id, "absent_for", now.Sub(next[id]).Round(time.Second), "replace_dead_agent_after", c.cfg.ReplaceDeadAgentAfter)
		}
	}
	c.lostSince, c.lostLogged = next, lost
	return lost
}

// headless reports whether st has no replica left to lead it: every
// replica is on a lost agent.
func headless(st metadata.PartitionState, lost map[int32]bool) bool {
	return len(st.Replicas) > 0 && !slices.ContainsFunc(st.Replicas, func(r int32) bool { return !lost[r] })
}

// uncleanReplacement is the state that gives a headless partition the
// replicas target, target[0] leading in a new leader epoch with an ISR of
// itself: what the balancer writes when the topic allows unclean leader
// election.
func uncleanReplacement(st metadata.PartitionState, target []int32) metadata.PartitionState {
	next := st
	next.Replicas = slices.Clone(target)
	next.ISR = []int32{target[0]}
	next.Leader = target[0]
	next.LeaderEpoch = st.LeaderEpoch + 1
	next.StateEpoch = st.StateEpoch + 1
	next.Target, next.Adding = nil, nil
	if next.ReplicationFactor == 0 {
		next.ReplicationFactor = int32(len(st.Replicas))
	}
	return next
}

// replaceHeadless writes the unclean replacement of a headless partition
// by CAS, unless the stored state changed meanwhile (an agent came back,
// another balancer acted).
func (c *Controller) replaceHeadless(ctx context.Context, ref stateRef, lost map[int32]bool, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("no live agent to place it on")
	}
	replaced := false
	var before metadata.PartitionState
	_, err := c.changeState(ctx, ref.topicID, ref.index, func(cur metadata.PartitionState) (metadata.PartitionState, error) {
		if !headless(cur, lost) {
			return cur, nil
		}
		before, replaced = cur, true
		return uncleanReplacement(cur, target), nil
	})
	if err != nil || !replaced {
		return err
	}
	c.metrics.uncleanReplacements.Inc()
	c.logger.Warn("balancer: every replica of the partition was on lost agents; new replicas restore from the bucket, and records acknowledged after its last upload are lost (unclean.leader.election.enable)",
		"topic", ref.topic, "partition", ref.index, "lost_replicas", before.Replicas, "replicas", target, "leader", target[0], "leader_epoch", before.LeaderEpoch+1)
	return nil
}
