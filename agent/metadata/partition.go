package metadata

import (
	"context"
	"fmt"
	"slices"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// PartitionState is a partition's state.json: who leads, at which epoch,
// and which replicas exist and are in sync. StateEpoch counts changes to the
// object; the writer bumps it (Kafka's partition epoch).
type PartitionState struct {
	Leader      int32 // -1 while the partition has no leader
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	StateEpoch  int32
	// Target, when set, is the replica set a reassignment moves the
	// partition to (docs/design.md §8), in preferred-leader order; the leader
	// completes the move once every target replica is in the ISR, and
	// clears it. While it runs, Replicas holds the old replicas plus
	// Adding, the target replicas that were not replicas before (Kafka's
	// AddingReplicas), so the leader serves their fetches.
	Target []int32
	Adding []int32
	// ReplicationFactor is how many replicas the partition should have:
	// the topic's at creation, an operator's reassignment's after it. The
	// balancer restores it once enough agents are active, after a drain
	// or a shortage of agents left fewer replicas. 0 (a state written
	// before it was kept) means len(Replicas).
	ReplicationFactor int32
}

// WantedReplicas is the replica count the partition should have.
func (st PartitionState) WantedReplicas() int {
	if st.ReplicationFactor > 0 {
		return int(st.ReplicationFactor)
	}
	return len(st.Replicas)
}

// Moving reports whether a reassignment is in progress.
func (st PartitionState) Moving() bool {
	return len(st.Target) > 0
}

// Removing is the replicas a reassignment in progress will drop (Kafka's
// RemovingReplicas).
func (st PartitionState) Removing() []int32 {
	if len(st.Target) == 0 {
		return nil
	}
	var out []int32
	for _, r := range st.Replicas {
		if !slices.Contains(st.Target, r) {
			out = append(out, r)
		}
	}
	return out
}

// Validate checks the invariants every stored state keeps: 1 to maxReplicas
// distinct non-negative replicas, an ISR of distinct replicas, a leader that
// is -1 or in the ISR, and non-negative epochs.
func (st PartitionState) Validate(maxReplicas int) error {
	if len(st.Replicas) == 0 || len(st.Replicas) > maxReplicas {
		return fmt.Errorf("%w: %d replicas; must be 1 to %d", ErrInvalidPartitionState, len(st.Replicas), maxReplicas)
	}
	for i, r := range st.Replicas {
		if r < 0 || slices.Contains(st.Replicas[:i], r) {
			return fmt.Errorf("%w: replicas %v: negative or repeated agent %d", ErrInvalidPartitionState, st.Replicas, r)
		}
	}
	for i, r := range st.ISR {
		if !slices.Contains(st.Replicas, r) || slices.Contains(st.ISR[:i], r) {
			return fmt.Errorf("%w: ISR %v: agent %d repeated or not among replicas %v", ErrInvalidPartitionState, st.ISR, r, st.Replicas)
		}
	}
	if st.Leader < -1 || st.Leader >= 0 && !slices.Contains(st.ISR, st.Leader) {
		return fmt.Errorf("%w: leader %d is not -1 and not in ISR %v", ErrInvalidPartitionState, st.Leader, st.ISR)
	}
	for i, r := range st.Target {
		if r < 0 || slices.Contains(st.Target[:i], r) || len(st.Target) > maxReplicas {
			return fmt.Errorf("%w: target replicas %v: negative or repeated agent %d, or more than %d", ErrInvalidPartitionState, st.Target, r, maxReplicas)
		}
	}
	for _, r := range st.Adding {
		if !slices.Contains(st.Target, r) || !slices.Contains(st.Replicas, r) {
			return fmt.Errorf("%w: adding replica %d is not both a target %v and a replica %v", ErrInvalidPartitionState, r, st.Target, st.Replicas)
		}
	}
	if st.ReplicationFactor < 0 || int(st.ReplicationFactor) > maxReplicas {
		return fmt.Errorf("%w: replication factor %d; must be 0 to %d", ErrInvalidPartitionState, st.ReplicationFactor, maxReplicas)
	}
	if st.LeaderEpoch < 0 || st.StateEpoch < 0 {
		return fmt.Errorf("%w: negative epoch (leader %d, state %d)", ErrInvalidPartitionState, st.LeaderEpoch, st.StateEpoch)
	}
	return nil
}

// PartitionState reads partition p of topicID and returns it with the ETag to
// pass to CASPartitionState. A missing object is ErrUnknownPartition (which
// also wraps objstore.ErrNotFound).
func (s *Store) PartitionState(ctx context.Context, topicID [16]byte, p int32) (PartitionState, string, error) {
	if p < 0 {
		return PartitionState{}, "", fmt.Errorf("%w: partition %d", ErrUnknownPartition, p)
	}
	key := stateKey(topicID, p)
	var obj stateObject
	etag, err := s.getObject(ctx, key, &obj)
	if objstore.IsNotFound(err) {
		return PartitionState{}, "", fmt.Errorf("%w: %s/%d: %w", ErrUnknownPartition, FormatTopicID(topicID), p, err)
	}
	if err != nil {
		return PartitionState{}, "", fmt.Errorf("read state of %s/%d: %w", FormatTopicID(topicID), p, err)
	}
	st := PartitionState{Leader: obj.Leader, LeaderEpoch: obj.LeaderEpoch, Replicas: obj.Replicas, ISR: obj.ISR, StateEpoch: obj.StateEpoch,
		Target: obj.Target, Adding: obj.Adding, ReplicationFactor: obj.ReplicationFactor}
	if st.ISR == nil {
		st.ISR = []int32{}
	}
	if err := st.Validate(s.settings.MaxReplicas); err != nil {
		return PartitionState{}, "", &CorruptError{Key: key, Err: err}
	}
	return st, etag, nil
}

// CASPartitionState writes st as partition p's state if the stored object
// still has etag ("" means: only if there is none yet) and returns the new
// ETag. A stale etag fails with an error wrapping both ErrConflict and
// objstore.ErrPreconditionFailed; re-read and decide again.
//
// It does not check that the topic still exists: a write for a deleted
// topic lands in an unnamed tree that CleanOrphans removes.
func (s *Store) CASPartitionState(ctx context.Context, topicID [16]byte, p int32, st PartitionState, etag string) (string, error) {
	if p < 0 || p >= s.settings.MaxPartitions {
		return "", fmt.Errorf("%w: partition %d outside [0, %d)", ErrInvalidPartitions, p, s.settings.MaxPartitions)
	}
	if topicID == ([16]byte{}) {
		return "", fmt.Errorf("metadata: CASPartitionState: zero topic id")
	}
	if err := st.Validate(s.settings.MaxReplicas); err != nil {
		return "", fmt.Errorf("partition %s/%d: %w", FormatTopicID(topicID), p, err)
	}
	opts := objstore.PutOptions{IfMatch: etag}
	if etag == "" {
		opts = objstore.PutOptions{IfAbsent: true}
	}
	isr := st.ISR
	if isr == nil {
		isr = []int32{}
	}
	obj := stateObject{Version: objectVersion, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch,
		Replicas: st.Replicas, ISR: isr, StateEpoch: st.StateEpoch, Target: st.Target, Adding: st.Adding,
		ReplicationFactor: st.ReplicationFactor}
	newETag, err := s.bucket.Put(ctx, stateKey(topicID, p), encodeObject(obj), opts)
	if objstore.IsPreconditionFailed(err) {
		return "", fmt.Errorf("%w: state of %s/%d changed since it was read: %w", ErrConflict, FormatTopicID(topicID), p, err)
	}
	if err != nil {
		return "", fmt.Errorf("write state of %s/%d: %w", FormatTopicID(topicID), p, err)
	}
	return newETag, nil
}

// original is the replica set before the reassignment in progress.
func (st PartitionState) original() []int32 {
	return slices.DeleteFunc(slices.Clone(st.Replicas), func(r int32) bool { return slices.Contains(st.Adding, r) })
}

func keepOnly(list, allowed []int32) []int32 {
	return slices.DeleteFunc(slices.Clone(list), func(r int32) bool { return !slices.Contains(allowed, r) })
}

// Reassign returns st moving to target (Kafka's AlterPartitionReassignments):
// the target replicas that are new join Replicas as Adding and start
// copying; the rest happens in CompleteReassignment. A reassignment in
// progress is replaced: replicas it added that the new target does not
// keep are dropped. A target equal to the original replicas cancels.
func (st PartitionState) Reassign(target []int32, maxReplicas int) (PartitionState, error) {
	if len(target) == 0 || len(target) > maxReplicas {
		return st, fmt.Errorf("%w: %d target replicas; must be 1 to %d", ErrInvalidReplicationFactor, len(target), maxReplicas)
	}
	for i, r := range target {
		if r < 0 || slices.Contains(target[:i], r) {
			return st, fmt.Errorf("%w: target replicas %v: negative or repeated agent %d", ErrInvalidReplicaAssignment, target, r)
		}
	}
	orig := st.original()
	if slices.Equal(orig, target) {
		if !st.Moving() {
			return st, nil
		}
		return st.CancelReassignment()
	}
	next := st
	next.Adding = nil
	for _, r := range target {
		if !slices.Contains(orig, r) {
			next.Adding = append(next.Adding, r)
		}
	}
	next.Replicas = append(slices.Clone(orig), next.Adding...)
	next.ISR = keepOnly(st.ISR, next.Replicas)
	next.Target = slices.Clone(target)
	next.StateEpoch++
	return next, nil
}

// CancelReassignment returns st back on its original replicas.
func (st PartitionState) CancelReassignment() (PartitionState, error) {
	if !st.Moving() {
		return st, ErrNoReassignment
	}
	next := st
	next.Replicas = st.original()
	next.ISR = keepOnly(st.ISR, next.Replicas)
	next.Target, next.Adding = nil, nil
	next.StateEpoch++
	return next, nil
}

// CompleteReassignment returns the state in which the move is done, once
// every target replica is in the ISR: Replicas become the target, the
// others leave the ISR, and if the leader is not a target replica the
// first in-sync target replica leads in a new epoch (a clean hand-over:
// it holds every committed record). ok is false while the move must wait.
func (st PartitionState) CompleteReassignment() (next PartitionState, ok bool) {
	if !st.Moving() {
		return st, false
	}
	for _, r := range st.Target {
		if !slices.Contains(st.ISR, r) {
			return st, false
		}
	}
	next = st
	next.Replicas = slices.Clone(st.Target)
	next.ISR = keepOnly(st.ISR, st.Target)
	next.Target, next.Adding = nil, nil
	next.StateEpoch++
	if !slices.Contains(st.Target, st.Leader) {
		next.Leader = st.Target[0]
		next.LeaderEpoch++
	}
	return next, true
}
