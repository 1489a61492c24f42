package replica

import "errors"

// The decisions a caller turns into Kafka error codes (agent/kafka does the
// mapping; this package never names a code). Every error a method returns
// wraps one of these; check with errors.Is.
var (
	// ErrNotLeader: the call needs the leader and this replica is not it,
	// or an acks=all append was written under a leader epoch that has since
	// ended (NOT_LEADER_OR_FOLLOWER).
	ErrNotLeader = errors.New("replica: not the leader")
	// ErrNotFollower: a follower-side call while this replica leads or has
	// no state yet.
	ErrNotFollower = errors.New("replica: not a follower")
	// ErrFencedLeaderEpoch: a request carries an older leader epoch than
	// this replica's (FENCED_LEADER_EPOCH). The sender is behind.
	ErrFencedLeaderEpoch = errors.New("replica: request leader epoch is older than the current one")
	// ErrUnknownLeaderEpoch: a request carries a newer leader epoch than
	// this replica's (UNKNOWN_LEADER_EPOCH). This replica is behind and
	// should re-read the partition state.
	ErrUnknownLeaderEpoch = errors.New("replica: request leader epoch is newer than the current one")
	// ErrNotEnoughReplicas: an acks=all append refused before writing
	// because the ISR is below min.insync.replicas (NOT_ENOUGH_REPLICAS).
	ErrNotEnoughReplicas = errors.New("replica: ISR is below min.insync.replicas")
	// ErrNotEnoughReplicasAfterAppend: an acks=all append that was written
	// but cannot be acknowledged because the ISR fell below
	// min.insync.replicas (NOT_ENOUGH_REPLICAS_AFTER_APPEND).
	ErrNotEnoughReplicasAfterAppend = errors.New("replica: ISR fell below min.insync.replicas after the append")
	// ErrNotReplica: the agent named in the call is not among the
	// partition's replicas (for this agent itself: it should drop the
	// partition).
	ErrNotReplica = errors.New("replica: not a replica of the partition")
	// ErrBelowLocalStart: a follower fetches below the leader's local log
	// start; the older data is in the bucket, and the follower restarts at
	// the local start (OFFSET_MOVED_TO_TIERED_STORAGE, or
	// OFFSET_OUT_OF_RANGE when the bucket does not hold it either).
	ErrBelowLocalStart = errors.New("replica: fetch offset below the leader's local log start")
	// ErrStaleState: a partition state older (state epoch or leader epoch)
	// than the one already applied; nothing changed.
	ErrStaleState = errors.New("replica: partition state older than the applied one")
	// ErrInvalidState: a partition state that breaks an invariant, or
	// that does not fit the call (BecomeLeader for another leader).
	ErrInvalidState = errors.New("replica: invalid partition state")
	// ErrNoPendingChange: ConfirmISRChange without a proposal in flight,
	// or with a state that is not its outcome.
	ErrNoPendingChange = errors.New("replica: no ISR change in flight")
	// ErrStaleAction: a follower reports the result of an action that is
	// no longer the current one (the leader or epoch changed meanwhile);
	// nothing changed.
	ErrStaleAction = errors.New("replica: result of a follower action that is no longer current")
	// ErrInvalidEpochAnswer: an OffsetForLeaderEpoch answer naming an epoch
	// above the one asked about, which no leader gives; following it could
	// loop forever, so it is refused and the query stays current.
	ErrInvalidEpochAnswer = errors.New("replica: OffsetForLeaderEpoch answer above the requested epoch")
	// ErrInvalidConfig wraps every Config.Validate failure.
	ErrInvalidConfig = errors.New("replica: invalid config")
)
