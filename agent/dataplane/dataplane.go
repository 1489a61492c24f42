// Package dataplane is the vocabulary the Kafka wire server (agent/kafka)
// shares with the data plane below it (agent/partition, agent/control and
// the agent root that wires them): a topic as the handlers see it, the
// families of a partition replica, partition moves, a live agent and its
// addresses (Broker), and the errors the data plane answers with, each of
// which the wire server maps to one Kafka error code. It depends on no
// security, group or transaction package, so the data plane does not
// either.
package dataplane

import (
	"context"
	"errors"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
)

// Reassignment is a partition move in progress.
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Adding    []int32
	Removing  []int32
}

// Reassignments moves partitions between agents and elects their leaders.
type Reassignments interface {
	// AlterPartitionReassignment moves a partition to replicas, or
	// cancels its move when replicas is nil.
	AlterPartitionReassignment(ctx context.Context, topic string, partition int32, replicas []int32) error
	// PartitionReassignments lists the moves in progress, of only the
	// named topics and partitions unless only is nil (a nil partition
	// list: every partition of the topic).
	PartitionReassignments(only map[string][]int32) []Reassignment
	// ElectPreferredLeader makes a partition's first replica its leader.
	ElectPreferredLeader(ctx context.Context, topic string, partition int32) error
}

// Broker is one live agent as Metadata and FindCoordinator report it.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack *string
	// Endpoints are the agent's advertised listeners by name; Host and
	// Port are its default one (--advertised-kafka-addr).
	Endpoints []Endpoint
}

// Endpoint is one agent's advertised address for one listener.
type Endpoint struct {
	Listener string
	Host     string
	Port     int32
}

// Address is where a client connected on listener should reach b: the
// endpoint of that name, or b's default address when b publishes none of
// that name (an agent started with only --kafka-addr, or a listener set
// that differs between agents, which docs/security.md warns against).
func (b Broker) Address(listener string) (string, int32) {
	for _, e := range b.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port
		}
	}
	return b.Host, b.Port
}

// Topic is a snapshot of a topic's metadata and its local partitions.
type Topic struct {
	Name     string
	ID       [16]byte
	Internal bool
	Configs  map[string]string // dynamic (topic-level) configs
	Resolved metadata.Resolved
	// PartitionCount and ReplicationFactor are set even when Partitions is
	// empty (a validate-only CreateTopics).
	PartitionCount    int32
	ReplicationFactor int16
	Partitions        []Partition
}

// AppendWait waits until a written batch satisfies its acks level: durable
// on this agent, and with acks=all held by every in-sync replica.
type AppendWait func(ctx context.Context) error

// VerifyTxn asks the coordinator of a Produce's transactional id whether
// the partition is in the ongoing transaction of producerID at epoch, or
// adds it (KIP-890): nil to append the batch, else the error the Produce
// answers for the partition.
type VerifyTxn func(ctx context.Context, producerID int64, epoch int16) error

// A partition replica, like the agent, comes in families by the caller's
// need: every caller asks ReplicaInfo where the partition lives and who
// leads it first, so the other families include it. Topic.Partitions holds
// the whole Partition; a handler helper takes the family it uses.

// ReplicaInfo says where a partition's replicas are and who leads them.
type ReplicaInfo interface {
	Index() int32
	Leader() int32
	LeaderEpoch() int32
	Replicas() []int32
	ISR() []int32
	// Local reports whether this agent holds a replica; a partition only
	// other agents hold is listed so that Metadata shows its leader.
	Local() bool
}

// PartitionReader is what consumers read: records, offsets and sizes.
type PartitionReader interface {
	ReplicaInfo
	// Read returns whole batches from offset, never past the high watermark.
	// Below the local log it reads from the bucket, waiting at most until
	// ctx ends.
	Read(ctx context.Context, offset int64, maxBytes int, minOne bool) ([]byte, error)
	// ReadsFromStore reports whether a read at offset goes to the store.
	ReadsFromStore(offset int64) bool
	HighWatermark() int64
	// LastStableOffset is where read_committed reads stop: the high
	// watermark, or before it the first offset of the oldest open
	// transaction.
	LastStableOffset() int64
	// AbortedTransactions are the aborted transactions that overlap
	// [from, upper), from the bucket's indexes below the local log.
	AbortedTransactions(ctx context.Context, from, upper int64) ([]log.AbortedTxn, error)
	// Producers is the producer state the local log keeps.
	Producers() []log.ProducerInfo
	LogStartOffset() int64
	// LocalLogStartOffset is the first offset on local disk (KIP-1005).
	LocalLogStartOffset() int64
	// HighestTieredOffset is the last offset in the bucket, -1 if none.
	HighestTieredOffset() int64
	LogEndOffset() int64
	Size() int64
	FindByTimestamp(ctx context.Context, ts int64) ([]byte, error)
	MaxTimestampBatch() ([]byte, error)
	// WatchData makes this partition's appends, HW moves and state
	// changes wake wake (a send that never blocks: wake has a buffer of
	// one) until UnwatchData(wake); a follower's long poll watches the
	// partitions it fetches, and no others.
	WatchData(wake chan<- struct{})
	UnwatchData(wake chan<- struct{})
	// DecompressionChecks are the verdicts on batches stored before
	// Produce bounded decompression (quarantine.go); nil for none.
	DecompressionChecks() DecompressionChecks
}

// PartitionWriter changes the log: Produce and DeleteRecords.
type PartitionWriter interface {
	ReplicaInfo
	// Append writes a batch the Produce handler has checked and stamped,
	// and returns its place without waiting; wait, which must be called
	// once, returns when acks are satisfied. Batches land in the order of
	// the calls, so the waits of a connection's pipelined produces may
	// overlap (and share an fsync) without reordering them.
	Append(raw []byte, acks int16) (res log.AppendResult, wait AppendWait, err error)
	// AppendTransactional is Append for a Produce of the request's
	// transactionalID (nil: none): a transactional batch that would open
	// its producer's transaction is appended only once verify accepts it
	// and no marker ended the transaction meanwhile (KIP-890; with add,
	// transaction version 2, verify adds the partition to it). verify is
	// called without locks and its error is returned as is
	// (agent/partition/txnguard.go).
	AppendTransactional(ctx context.Context, raw []byte, acks int16, transactionalID *string, add bool, verify VerifyTxn) (res log.AppendResult, wait AppendWait, err error)
	DeleteRecordsBefore(ctx context.Context, offset int64) error
}

// DeferredWriter is implemented by partitions that learn an append's
// offsets only when its wait ends: a diskless partition, whose batch
// coordinator assigns them at commit (agent/diskless). The Produce
// handler takes the result from wait; Append and AppendTransactional of
// such a partition return no offsets.
type DeferredWriter interface {
	AppendDeferred(ctx context.Context, raw []byte, acks int16, transactionalID *string, add bool, verify VerifyTxn) (wait func(ctx context.Context) (log.AppendResult, error), err error)
}

// OffsetsRefresher is implemented by partitions whose offsets are
// answered from a copy this agent keeps (a diskless partition's, from its
// batch coordinator): ListOffsets refreshes them first.
type OffsetsRefresher interface {
	RefreshOffsets(ctx context.Context) error
}

// Replication is the leader's side of replication: what followers ask.
type Replication interface {
	ReplicaInfo
	// OffsetForLeaderEpoch checks currentEpoch (-1: unchecked) and that
	// this replica leads, then answers where the largest epoch at or below
	// epoch ends in the log.
	OffsetForLeaderEpoch(currentEpoch, epoch int32) (int32, int64, error)
	// ReplicaRead serves a follower's fetch (docs/design.md §6): the epoch
	// fence, records up to the log end (at most maxBytes, 0 for none,
	// unless minOne: then the first batch whole), and the fetch recorded
	// towards the HW and the ISR, with records or without.
	ReplicaRead(replicaID, currentEpoch int32, offset int64, maxBytes int, minOne bool) (ReplicaReadResult, error)
}

// Partition is one partition replica on this agent: every family.
type Partition interface {
	PartitionReader
	PartitionWriter
	Replication
}

// ReplicaReadResult is a follower fetch's answer; HighWatermark and
// LogStartOffset (the partition's, as consumers see it) are set with an
// error too.
type ReplicaReadResult struct {
	Records        []byte
	HighWatermark  int64
	LogStartOffset int64
}

// Errors the agent returns that map to specific Kafka codes.
var (
	ErrUnknownTopicOrPartition = errors.New("kafka: unknown topic or partition")
	ErrNotLeader               = errors.New("kafka: not the leader for this partition")
	ErrNotEnoughReplicas       = errors.New("kafka: not enough in-sync replicas")
	ErrTopicBeingDeleted       = errors.New("kafka: topic is being deleted")
	ErrNotCoordinator          = errors.New("kafka: not the coordinator for this group")
	ErrCoordinatorNotAvailable = errors.New("kafka: coordinator not available")
	// ErrElectionNotNeeded: the preferred replica already leads.
	ErrElectionNotNeeded = errors.New("kafka: the preferred replica already leads")
	// ErrPreferredLeaderNotAvailable: the preferred replica is not alive
	// and in sync.
	ErrPreferredLeaderNotAvailable = errors.New("kafka: the preferred replica cannot lead now")
)

// DecompressionChecks keep a partition's W and the verdicts of batches
// checked below it (agent/log/quarantine.go). Safe for concurrent use.
type DecompressionChecks interface {
	// ValidatedFrom is W: batches at or above it need no check.
	ValidatedFrom() int64
	// CheckedVerdict reports whether the batch at base with crc has been
	// checked, and if so whether it failed.
	CheckedVerdict(base int64, crc uint32) (known, bad bool)
	// RecordChecks keeps new verdicts, in offset order; start is the
	// partition's first offset (verdicts below it are dropped).
	RecordChecks(start int64, verdicts []log.CheckVerdict) error
}
