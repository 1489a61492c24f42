package metadata

import (
	"errors"
	"fmt"
)

var (
	// ErrNoReassignment: a cancel for a partition that is not being
	// reassigned (NO_REASSIGNMENT_IN_PROGRESS).
	ErrNoReassignment = errors.New("metadata: no reassignment in progress")
	// ErrTopicExists: CreateTopic of a name that is taken.
	ErrTopicExists = errors.New("metadata: topic already exists")
	// ErrUnknownTopic: the topic does not exist (or only half-exists, see the
	// package doc).
	ErrUnknownTopic = errors.New("metadata: unknown topic")
	// ErrUnknownPartition: no state.json for the partition.
	ErrUnknownPartition = errors.New("metadata: unknown partition")
	// ErrInvalidTopic: the topic name breaks Kafka's naming rules.
	ErrInvalidTopic = errors.New("metadata: invalid topic name")
	// ErrInvalidConfig: an unknown topic config key or a bad value; the
	// wrapping message names the key.
	ErrInvalidConfig = errors.New("metadata: invalid topic config")
	// ErrInvalidPartitions: a partition count out of range, or not growing.
	ErrInvalidPartitions = errors.New("metadata: invalid number of partitions")
	// ErrInvalidReplicationFactor: the replication factor is < 1 or larger
	// than the number of agents.
	ErrInvalidReplicationFactor = errors.New("metadata: invalid replication factor")
	// ErrInvalidReplicaAssignment: an assignment with the wrong length, an
	// empty or oversized replica list, a negative or duplicate agent id.
	ErrInvalidReplicaAssignment = errors.New("metadata: invalid replica assignment")
	// ErrInvalidPartitionState: a state.json that breaks its invariants
	// (ISR not within replicas, leader not in ISR, negative epochs).
	ErrInvalidPartitionState = errors.New("metadata: invalid partition state")
	// ErrUnknownAgent: no registration for the agent id.
	ErrUnknownAgent = errors.New("metadata: unknown agent")
	// ErrConflict: a conditional write lost. From CASPartitionState it means
	// the etag was stale; from the CAS loops it means they ran out of
	// retries. The error also wraps objstore.ErrPreconditionFailed.
	ErrConflict = errors.New("metadata: concurrent update conflict")
	// ErrProducerIDsExhausted: the producer id space (int64) is used up.
	ErrProducerIDsExhausted = errors.New("metadata: producer ids exhausted")
	// ErrUnknownCredential: DeleteScramCredential of a user without a
	// credential of that mechanism.
	ErrUnknownCredential = errors.New("metadata: no such SCRAM credential")
	// ErrCorrupt: an object that is not valid JSON of its kind.
	ErrCorrupt = errors.New("metadata: corrupt object")
	// ErrUnsupportedVersion: an object written by a newer Strata.
	ErrUnsupportedVersion = errors.New("metadata: unsupported object version")
)

// CorruptError says which object could not be decoded and why.
type CorruptError struct {
	Key string
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("metadata: corrupt object %q: %v", e.Key, e.Err)
}

// Unwrap lets errors.Is(err, ErrCorrupt) hold, as well as matching the cause.
func (e *CorruptError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// VersionError is returned for an object whose "version" this Strata does
// not understand (written by a newer release).
type VersionError struct {
	Key       string
	Version   int
	Supported int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("metadata: object %q has version %d; this agent reads up to version %d (upgrade the agent)",
		e.Key, e.Version, e.Supported)
}

// Unwrap makes errors.Is(err, ErrUnsupportedVersion) hold.
func (e *VersionError) Unwrap() error { return ErrUnsupportedVersion }
