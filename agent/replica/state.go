package replica

import (
	"fmt"
	"slices"
)

// State is the part of a partition's state.json the machine decides from.
// Its fields are those of metadata.PartitionState, in the same order, so
// the agent converts with replica.State(ps) and back; this package does
// not import metadata to stay free of the store.
type State struct {
	Leader      int32 // -1 while the partition has no leader
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	StateEpoch  int32 // bumped by every write of state.json (Kafka's partition epoch)
}

// validate checks what the machine relies on: distinct non-negative
// replicas, an ISR among them, a leader that is -1 or in the ISR.
func (s State) validate() error {
	if len(s.Replicas) == 0 {
		return fmt.Errorf("%w: no replicas", ErrInvalidState)
	}
	for i, r := range s.Replicas {
		if r < 0 || slices.Contains(s.Replicas[:i], r) {
			return fmt.Errorf("%w: replicas %v: negative or repeated %d", ErrInvalidState, s.Replicas, r)
		}
	}
	for i, r := range s.ISR {
		if !slices.Contains(s.Replicas, r) || slices.Contains(s.ISR[:i], r) {
			return fmt.Errorf("%w: ISR %v: %d repeated or not among replicas %v", ErrInvalidState, s.ISR, r, s.Replicas)
		}
	}
	if s.Leader < -1 || s.Leader >= 0 && !slices.Contains(s.ISR, s.Leader) {
		return fmt.Errorf("%w: leader %d is not -1 and not in ISR %v", ErrInvalidState, s.Leader, s.ISR)
	}
	if s.LeaderEpoch < 0 || s.StateEpoch < 0 {
		return fmt.Errorf("%w: negative epoch (leader %d, state %d)", ErrInvalidState, s.LeaderEpoch, s.StateEpoch)
	}
	return nil
}

func (s State) clone() State {
	s.Replicas = slices.Clone(s.Replicas)
	s.ISR = slices.Clone(s.ISR)
	return s
}

// LogEnd is where the leader's own log stands when an event happens.
type LogEnd struct {
	// LEO is the log end offset: what a follower fetching now can read up
	// to. A follower whose fetch offset reaches it is caught up.
	LEO int64
	// Durable is the end the HW may reach: FlushedOffset under
	// log.flush=always (an acknowledged record is on the leader's disk),
	// LEO under the other policies. At most LEO.
	Durable int64
}

// EpochLog is what the machine reads from a replica's own log to answer or
// follow OffsetForLeaderEpoch; *log.Log implements it. The machine only
// calls it during a method call, never keeps it, and never writes through it.
type EpochLog interface {
	// LatestEpoch is the newest epoch in the log's epoch cache, -1 if none.
	LatestEpoch() int32
	// EndOffsetForEpoch is the largest epoch at or below epoch and the
	// start of the next higher one (the log end for the latest); a
	// requested epoch below every known one comes back as itself with the
	// first start; unknown is (-1, -1).
	EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64)
	// LogEndOffset is the next offset to be written.
	LogEndOffset() int64
}

// UndefinedEpoch and UndefinedOffset are OffsetForLeaderEpoch's "unknown"
// (Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET), and the LEO of a
// follower the leader has not heard from in its epoch.
const (
	UndefinedEpoch  int32 = -1
	UndefinedOffset int64 = -1
)

// EpochEndOffset is an OffsetForLeaderEpoch answer: the largest epoch at or
// below the requested one, and the offset where it ends.
type EpochEndOffset struct {
	Epoch     int32
	EndOffset int64
}

var undefinedEpochEnd = EpochEndOffset{Epoch: UndefinedEpoch, EndOffset: UndefinedOffset}
