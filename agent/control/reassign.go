package control

// Reassignments (docs/design.md §8): a partition's state.json carries a target
// replica set; the new replicas join at once and copy the leader's local
// tail (older records are in the bucket), and the leader completes the move
// once every target replica is in sync. Kafka's AlterPartitionReassignments,
// ListPartitionReassignments and ElectLeaders write and read these states,
// and the balancer (balancer.go) writes the same targets.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
)

// ChangeState applies fn to a partition's stored state by CAS, re-reading
// on conflict, and announces the result. fn returning the state unchanged
// (same StateEpoch) writes nothing.
func (c *Controller) changeState(ctx context.Context, topicID [16]byte, index int32, fn func(metadata.PartitionState) (metadata.PartitionState, error)) (metadata.PartitionState, error) {
	for attempt := 0; ; attempt++ {
		st, etag, err := c.store.PartitionState(ctx, topicID, index)
		if err != nil {
			return st, err
		}
		next, err := fn(st)
		if err != nil || next.StateEpoch == st.StateEpoch {
			return st, err
		}
		newETag, err := c.store.CASPartitionState(ctx, topicID, index, next, etag)
		if errors.Is(err, metadata.ErrConflict) && attempt < 5 {
			continue
		}
		if err != nil {
			return st, err
		}
		c.stateWritten(Key{topicID, index}, next, newETag)
		return next, nil
	}
}

// stateWritten applies a state this agent wrote and tells the others.
func (c *Controller) stateWritten(k Key, st metadata.PartitionState, etag string) {
	c.applyStored(k, st, etag)
	c.announceState(k, st.StateEpoch)
}

// applyStored applies a state read from (or written to) the store to the
// served partition: as a state of a local replica, as a peer's, or by
// opening or dropping the local replica when the replica set now includes
// or excludes this agent.
func (c *Controller) applyStored(k Key, st metadata.PartitionState, etag string) {
	local, peer := c.host.Lookup(k)
	mine := slices.Contains(st.Replicas, c.id)
	switch {
	case local != nil && mine:
		c.ApplyState(local, st, etag)
	case peer != nil && !mine:
		peer.SetState(st)
	case local != nil || peer != nil:
		c.host.MoveReplica(k, st, etag)
	}
}

// completeMoves finishes the reassignments of partitions led here whose
// target replicas are all in sync. It runs only in the replication loop,
// which owns c.movesSeen (when this leader first saw each move, for the
// time a move took).
func (c *Controller) completeMoves(ctx context.Context, now time.Time) {
	leading := map[Key]bool{}
	// Moves this agent no longer leads, or that were cancelled, are
	// forgotten, so a later move of the partition is timed afresh.
	defer func() {
		for k := range c.movesSeen {
			if !leading[k] {
				delete(c.movesSeen, k)
			}
		}
	}()
	for _, p := range c.host.Partitions() {
		st, _ := p.StateAndETag()
		if st.Leader != c.id || !st.Moving() {
			continue
		}
		k := Key{p.TopicID(), p.Index()}
		leading[k] = true
		if _, ok := c.movesSeen[k]; !ok {
			c.movesSeen[k] = now
		}
		if _, ok := st.CompleteReassignment(); !ok {
			continue
		}
		next, err := c.changeState(ctx, p.TopicID(), p.Index(), func(cur metadata.PartitionState) (metadata.PartitionState, error) {
			if cur.Leader != c.id || cur.LeaderEpoch != st.LeaderEpoch {
				return cur, nil // no longer this agent's to complete
			}
			done, _ := cur.CompleteReassignment()
			return done, nil
		})
		if err != nil {
			c.logger.Warn("complete reassignment", "topic", p.Topic(), "partition", p.Index(), "err", err)
			continue
		}
		if next.Moving() {
			continue // nothing written: the move is no longer this agent's to complete
		}
		took := now.Sub(c.movesSeen[k])
		delete(c.movesSeen, k)
		c.metrics.movesDone.Inc()
		c.metrics.moveSeconds.Observe(took.Seconds())
		c.logger.Info("reassignment complete", "topic", p.Topic(), "partition", p.Index(), "replicas", next.Replicas,
			"leader", next.Leader, "leader_epoch", next.LeaderEpoch, "took", took.Round(time.Millisecond))
	}
}

// Reassign writes a reassignment: replicas nil cancels. Target agents
// must be live. setRF makes len(replicas) the partition's replication
// factor, as an operator's target does in Kafka.
//
// setRF makes len(replicas) the
// partition's replication factor. The balancer's moves keep the factor:
// one that fewer active agents forced down comes back later.
func (c *Controller) Reassign(ctx context.Context, topic string, index int32, replicas []int32, setRF bool) error {
	t, ok := c.host.Topic(topic)
	if !ok || index < 0 || index >= t.PartitionCount {
		return fmt.Errorf("%w: %s-%d", dataplane.ErrUnknownTopicOrPartition, topic, index)
	}
	if replicas != nil {
		live := c.host.PlacementAgents()
		for _, r := range replicas {
			if !slices.Contains(live, r) {
				return fmt.Errorf("%w: agent %d is not a live agent (live: %v)", metadata.ErrInvalidReplicaAssignment, r, live)
			}
		}
	}
	_, err := c.changeState(ctx, t.ID, index, func(st metadata.PartitionState) (metadata.PartitionState, error) {
		if replicas == nil {
			return st.CancelReassignment()
		}
		next, err := st.Reassign(replicas, metadata.DefaultSettings().MaxReplicas)
		if err == nil && setRF && int(next.ReplicationFactor) != len(replicas) {
			next.ReplicationFactor = int32(len(replicas))
			if next.StateEpoch == st.StateEpoch {
				next.StateEpoch++ // only the factor changed: still a write
			}
		}
		return next, err
	})
	if err == nil {
		c.logger.Info("partition reassignment", "topic", topic, "partition", index, "target", replicas)
	}
	return err
}

// PartitionReassignments implements dataplane.Reassignments: every partition being
// moved, or those of only (topic -> partitions; nil: all).
func (c *Controller) PartitionReassignments(only map[string][]int32) []dataplane.Reassignment {
	var out []dataplane.Reassignment
	for _, t := range c.host.Topics() {
		want, named := only[t.Name]
		if only != nil && !named {
			continue
		}
		for _, p := range t.Partitions {
			if want != nil && !slices.Contains(want, p.Index()) {
				continue
			}
			st := partition.StateOf(p)
			if !st.Moving() {
				continue
			}
			out = append(out, dataplane.Reassignment{Topic: t.Name, Partition: p.Index(), Replicas: st.Replicas,
				Adding: st.Adding, Removing: st.Removing()})
		}
	}
	return out
}

// ElectPreferredLeader implements dataplane.Reassignments: the partition's first
// replica leads, if it is in sync and alive, in a new epoch.
func (c *Controller) ElectPreferredLeader(ctx context.Context, topic string, index int32) error {
	t, ok := c.host.Topic(topic)
	if !ok || index < 0 || index >= t.PartitionCount {
		return fmt.Errorf("%w: %s-%d", dataplane.ErrUnknownTopicOrPartition, topic, index)
	}
	live := c.host.PlacementAgents()
	_, err := c.changeState(ctx, t.ID, index, func(st metadata.PartitionState) (metadata.PartitionState, error) {
		return preferredLeaderState(st, live)
	})
	return err
}

// preferredLeaderState moves the leadership to the first replica.
func preferredLeaderState(st metadata.PartitionState, live []int32) (metadata.PartitionState, error) {
	pref := st.Replicas[0]
	switch {
	case st.Leader == pref:
		return st, dataplane.ErrElectionNotNeeded
	case !slices.Contains(st.ISR, pref) || !slices.Contains(live, pref):
		return st, fmt.Errorf("%w: preferred replica %d is not alive and in sync (ISR %v)", dataplane.ErrPreferredLeaderNotAvailable, pref, st.ISR)
	}
	next := st
	next.Leader, next.LeaderEpoch, next.StateEpoch = pref, st.LeaderEpoch+1, st.StateEpoch+1
	return next, nil
}
