package agent

// Reassignments (DESIGN.md §8): a partition's state.json carries a target
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

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/metadata"
)

// changeState applies fn to a partition's stored state by CAS, re-reading
// on conflict, and announces the result. fn returning the state unchanged
// (same StateEpoch) writes nothing.
func (a *Agent) changeState(ctx context.Context, topicID [16]byte, index int32, fn func(metadata.PartitionState) (metadata.PartitionState, error)) (metadata.PartitionState, error) {
	for attempt := 0; ; attempt++ {
		st, etag, err := a.store.PartitionState(ctx, topicID, index)
		if err != nil {
			return st, err
		}
		next, err := fn(st)
		if err != nil || next.StateEpoch == st.StateEpoch {
			return st, err
		}
		newETag, err := a.store.CASPartitionState(ctx, topicID, index, next, etag)
		if errors.Is(err, metadata.ErrConflict) && attempt < 5 {
			continue
		}
		if err != nil {
			return st, err
		}
		a.stateWritten(partitionKey{topicID, index}, next, newETag)
		return next, nil
	}
}

// stateWritten applies a state this agent wrote and tells the others.
func (a *Agent) stateWritten(k partitionKey, st metadata.PartitionState, etag string) {
	a.applyStored(k, st, etag)
	a.announceState(k, st.StateEpoch)
}

// applyStored applies a state read from (or written to) the store to the
// served partition: as a state of a local replica, as a peer's, or by
// opening or dropping the local replica when the replica set now includes
// or excludes this agent.
func (a *Agent) applyStored(k partitionKey, st metadata.PartitionState, etag string) {
	local, peer := a.partitionByKey(k)
	mine := slices.Contains(st.Replicas, a.id)
	switch {
	case local != nil && mine:
		a.applyState(local, st, etag)
	case peer != nil && !mine:
		peer.setState(st)
	case local != nil || peer != nil:
		a.moveReplica(k, st, etag)
	}
}

// moveReplica opens this agent's replica of a partition it was just given,
// or closes and removes one it no longer holds.
func (a *Agent) moveReplica(k partitionKey, st metadata.PartitionState, etag string) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	a.mu.RLock()
	e := a.byID[k.topicID]
	a.mu.RUnlock()
	if e == nil {
		return
	}
	parts, peers := slices.Clone(e.parts), slices.Clone(e.peers)
	if slices.Contains(st.Replicas, a.id) {
		i := slices.IndexFunc(peers, func(p *peerPartition) bool { return p.index == k.index })
		if i < 0 {
			return // opened meanwhile
		}
		p, err := a.openPartition(e.meta, e.snap.Resolved, k.index)
		if err != nil {
			a.logger.Error("open a new replica", "topic", e.meta.Name, "partition", k.index, "err", err)
			return
		}
		if e.snap.Resolved.RemoteStorage {
			// First: the empty log then starts where the bucket ends,
			// and only the untiered tail is copied from the leader.
			p.state = st
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := a.startTiering(ctx, p)
			cancel()
			p.state = metadata.PartitionState{Leader: -1, LeaderEpoch: -1, StateEpoch: -1}
			if err != nil {
				a.logger.Warn("tiering of a new replica; retried later", "topic", e.meta.Name, "partition", k.index, "err", err)
			}
		}
		a.applyState(p, st, etag)
		peers = slices.Delete(peers, i, i+1)
		parts = append(parts, p)
		a.logger.Info("replica added to this agent", "topic", e.meta.Name, "partition", k.index, "leader", st.Leader)
	} else {
		i := slices.IndexFunc(parts, func(p *partition) bool { return p.index == k.index })
		if i < 0 {
			return
		}
		p := parts[i]
		if e.meta.Name == offsetsTopic {
			a.unloadCoordinator(k.index)
		}
		p.movedAway()
		if err := p.close(); err != nil {
			a.logger.Warn("close a moved replica", "topic", e.meta.Name, "partition", k.index, "err", err)
		}
		a.removeDir(partitionDirName(e.meta.Name, k.index), "the replica moved to other agents")
		parts = slices.Delete(parts, i, i+1)
		peers = append(peers, newPeerPartition(k.index, st))
	}
	a.putTopic(newTopicEntry(e.meta, e.snap.Resolved, parts, peers))
}

// completeMoves finishes the reassignments of partitions led here whose
// target replicas are all in sync. It runs only in the replication loop,
// which owns a.movesSeen (when this leader first saw each move, for the
// time a move took).
func (a *Agent) completeMoves(ctx context.Context) {
	now := time.Now()
	leading := map[partitionKey]bool{}
	// Moves this agent no longer leads, or that were cancelled, are
	// forgotten, so a later move of the partition is timed afresh.
	defer func() {
		for k := range a.movesSeen {
			if !leading[k] {
				delete(a.movesSeen, k)
			}
		}
	}()
	for _, p := range a.localPartitions() {
		st, _ := p.stateAndETag()
		if st.Leader != a.id || !st.Moving() {
			continue
		}
		k := partitionKey{p.topicID, p.index}
		leading[k] = true
		if _, ok := a.movesSeen[k]; !ok {
			a.movesSeen[k] = now
		}
		if _, ok := st.CompleteReassignment(); !ok {
			continue
		}
		next, err := a.changeState(ctx, p.topicID, p.index, func(cur metadata.PartitionState) (metadata.PartitionState, error) {
			if cur.Leader != a.id || cur.LeaderEpoch != st.LeaderEpoch {
				return cur, nil // no longer this agent's to complete
			}
			done, _ := cur.CompleteReassignment()
			return done, nil
		})
		if err != nil {
			a.logger.Warn("complete reassignment", "topic", p.topic, "partition", p.index, "err", err)
			continue
		}
		if next.Moving() {
			continue // nothing written: the move is no longer this agent's to complete
		}
		took := now.Sub(a.movesSeen[k])
		delete(a.movesSeen, k)
		a.movesDone.Inc()
		a.moveSeconds.Observe(took.Seconds())
		a.logger.Info("reassignment complete", "topic", p.topic, "partition", p.index, "replicas", next.Replicas,
			"leader", next.Leader, "leader_epoch", next.LeaderEpoch, "took", took.Round(time.Millisecond))
	}
}

// AlterPartitionReassignment implements kafka.Backend: replicas nil
// cancels. Target agents must be live. An operator's target also sets the
// partition's replication factor, as in Kafka.
func (a *Agent) AlterPartitionReassignment(ctx context.Context, topic string, index int32, replicas []int32) error {
	return a.reassign(ctx, topic, index, replicas, true)
}

// reassign writes a reassignment; setRF makes len(replicas) the
// partition's replication factor. The balancer's moves keep the factor:
// one that fewer active agents forced down comes back later.
func (a *Agent) reassign(ctx context.Context, topic string, index int32, replicas []int32, setRF bool) error {
	e, ok := a.entry(topic)
	if !ok || index < 0 || index >= e.meta.Partitions {
		return fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, topic, index)
	}
	if replicas != nil {
		live := a.placementAgents()
		for _, r := range replicas {
			if !slices.Contains(live, r) {
				return fmt.Errorf("%w: agent %d is not a live agent (live: %v)", metadata.ErrInvalidReplicaAssignment, r, live)
			}
		}
	}
	_, err := a.changeState(ctx, e.meta.ID, index, func(st metadata.PartitionState) (metadata.PartitionState, error) {
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
		a.logger.Info("partition reassignment", "topic", topic, "partition", index, "target", replicas)
	}
	return err
}

// PartitionReassignments implements kafka.Backend: every partition being
// moved, or those of only (topic -> partitions; nil: all).
func (a *Agent) PartitionReassignments(only map[string][]int32) []kafka.Reassignment {
	var out []kafka.Reassignment
	for _, t := range a.Topics() {
		want, named := only[t.Name]
		if only != nil && !named {
			continue
		}
		for _, p := range t.Partitions {
			if want != nil && !slices.Contains(want, p.Index()) {
				continue
			}
			st := partitionState(p)
			if !st.Moving() {
				continue
			}
			out = append(out, kafka.Reassignment{Topic: t.Name, Partition: p.Index(), Replicas: st.Replicas,
				Adding: st.Adding, Removing: st.Removing()})
		}
	}
	return out
}

// partitionState is the applied state of a local or peer partition.
func partitionState(p kafka.Partition) metadata.PartitionState {
	switch p := p.(type) {
	case *partition:
		st, _ := p.stateAndETag()
		return st
	case *peerPartition:
		return p.state()
	}
	return metadata.PartitionState{}
}

// ElectPreferredLeader implements kafka.Backend: the partition's first
// replica leads, if it is in sync and alive, in a new epoch.
func (a *Agent) ElectPreferredLeader(ctx context.Context, topic string, index int32) error {
	e, ok := a.entry(topic)
	if !ok || index < 0 || index >= e.meta.Partitions {
		return fmt.Errorf("%w: %s-%d", kafka.ErrUnknownTopicOrPartition, topic, index)
	}
	live := a.placementAgents()
	_, err := a.changeState(ctx, e.meta.ID, index, func(st metadata.PartitionState) (metadata.PartitionState, error) {
		return preferredLeaderState(st, live)
	})
	return err
}

// preferredLeaderState moves the leadership to the first replica.
func preferredLeaderState(st metadata.PartitionState, live []int32) (metadata.PartitionState, error) {
	pref := st.Replicas[0]
	switch {
	case st.Leader == pref:
		return st, kafka.ErrElectionNotNeeded
	case !slices.Contains(st.ISR, pref) || !slices.Contains(live, pref):
		return st, fmt.Errorf("%w: preferred replica %d is not alive and in sync (ISR %v)", kafka.ErrPreferredLeaderNotAvailable, pref, st.ISR)
	}
	next := st
	next.Leader, next.LeaderEpoch, next.StateEpoch = pref, st.LeaderEpoch+1, st.StateEpoch+1
	return next, nil
}
