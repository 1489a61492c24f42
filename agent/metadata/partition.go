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
	st := PartitionState{Leader: obj.Leader, LeaderEpoch: obj.LeaderEpoch, Replicas: obj.Replicas, ISR: obj.ISR, StateEpoch: obj.StateEpoch}
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
		Replicas: st.Replicas, ISR: isr, StateEpoch: st.StateEpoch}
	newETag, err := s.bucket.Put(ctx, stateKey(topicID, p), encodeObject(obj), opts)
	if objstore.IsPreconditionFailed(err) {
		return "", fmt.Errorf("%w: state of %s/%d changed since it was read: %w", ErrConflict, FormatTopicID(topicID), p, err)
	}
	if err != nil {
		return "", fmt.Errorf("write state of %s/%d: %w", FormatTopicID(topicID), p, err)
	}
	return newETag, nil
}
