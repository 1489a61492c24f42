package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/quota"
	"github.com/strata-streaming/strata/agent/txn"
	"github.com/strata-streaming/strata/internal/scram"
)

// The handlers' view of the agent comes in families, one per kind of caller,
// so that a handler depends on, and a test of it fakes, only the family it
// uses: Metadata needs Cluster and TopicReader (and TopicAdmin to
// auto-create), the group handlers need Groups, and so on. The agent
// implements them all (Backend); this package never imports the agent, so
// the dependency points one way. Every method is safe for concurrent use.

// Cluster says who this agent and its live peers are.
type Cluster interface {
	ClusterID() string
	AgentID() int32
	Brokers() []Broker
	// DataDir is the log directory reported by DescribeLogDirs.
	DataDir() string
	// AgentConfigs describes the agent-level settings (the BROKER resource).
	AgentConfigs() []metadata.ConfigEntry
}

// TopicReader looks topics up. The *Topic it returns is a snapshot the
// caller must not change.
type TopicReader interface {
	Topics() []*Topic
	Topic(name string) (*Topic, bool)
	TopicByID(id [16]byte) (*Topic, bool)
	AutoCreateTopics() bool
	// DefaultPartitions is num.partitions, used for auto-created topics and
	// CreateTopics with NumPartitions -1.
	DefaultPartitions() int32
	TopicConfigDefaults() metadata.Defaults
	// DataSignal returns a channel closed at the next high-watermark advance
	// of any partition; long-polling fetches wait on it.
	DataSignal() <-chan struct{}
}

// TopicAdmin creates, deletes and changes topics.
type TopicAdmin interface {
	// CreateTopic validates and (unless validateOnly) creates a topic.
	// partitions < 0 and replicationFactor < 0 mean the agent's defaults.
	CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string, validateOnly bool) (*Topic, error)
	DeleteTopic(ctx context.Context, name string) error
	CreatePartitions(ctx context.Context, name string, total int32, validateOnly bool) error
	// AlterTopicConfigs replaces a topic's dynamic configs with what fn
	// returns, after validating them.
	AlterTopicConfigs(ctx context.Context, name string, fn func(current map[string]string) (map[string]string, error), validateOnly bool) error
}

// ProducerIDs hands out producer ids (InitProducerId).
type ProducerIDs interface {
	NewProducerID(ctx context.Context) (int64, error)
}

// Groups finds and loads consumer group coordinators.
type Groups interface {
	// FindGroupCoordinator returns the agent that coordinates a group,
	// creating __consumer_offsets on first use.
	FindGroupCoordinator(ctx context.Context, group string) (Broker, error)
	// GroupCoordinator returns the coordinator of a group when this agent
	// is it (ErrNotCoordinator otherwise), loading it on first use.
	GroupCoordinator(ctx context.Context, group string) (*group.Coordinator, error)
	// GroupCoordinators returns the coordinators loaded on this agent.
	GroupCoordinators() []*group.Coordinator
}

// Transactions finds and loads transaction coordinators, and writes the
// markers that end transactions on the partitions this agent leads.
type Transactions interface {
	// FindTxnCoordinator returns the agent that coordinates a
	// transactional id, creating __transaction_state on first use.
	FindTxnCoordinator(ctx context.Context, transactionalID string) (Broker, error)
	// TxnCoordinator returns the coordinator of a transactional id when
	// this agent is it (ErrNotCoordinator otherwise), loading it on first
	// use.
	TxnCoordinator(ctx context.Context, transactionalID string) (*txn.Coordinator, error)
	// TxnCoordinators returns the coordinators loaded on this agent.
	TxnCoordinators() []*txn.Coordinator
	// GroupOffsetsPartition is the partition of __consumer_offsets that
	// holds a group's offsets (AddOffsetsToTxn adds it to a transaction).
	GroupOffsetsPartition(ctx context.Context, group string) (int32, error)
	// WriteTxnMarker appends a transaction marker to a partition this
	// agent leads and returns once acks=all holds; on __consumer_offsets
	// it also completes the group's pending transactional offsets.
	WriteTxnMarker(ctx context.Context, topic string, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error
	// VerifyTxn asks the coordinator of transactionalID, here or on
	// another agent, whether the partition is in the producer's ongoing
	// transaction (KIP-890 part 1): nil if it is, txn.ErrInvalidTxnState
	// if not. With add (part 2, transaction version 2) the coordinator
	// adds it instead, opening a transaction if none is.
	VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error
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

// Users holds the SCRAM credentials SASL authenticates against
// (docs/security.md).
type Users interface {
	// ScramCredential returns a user's credential for one mechanism from
	// the agent's cache, without blocking: it runs on every SASL login.
	ScramCredential(user string, m *scram.Mechanism) (scram.Credential, bool)
	// ScramUsers reads every user's credentials from the store.
	ScramUsers(ctx context.Context) (map[string][]scram.Credential, error)
	// UpsertScramCredential creates or replaces a user's credential for
	// its mechanism.
	UpsertScramCredential(ctx context.Context, user string, c scram.Credential) error
	// DeleteScramCredential removes a user's credential for m; it fails
	// with ErrNoSuchCredential when there is none.
	DeleteScramCredential(ctx context.Context, user string, m *scram.Mechanism) error
}

// Authorizer decides what a principal may do (--authorizer acl) and keeps
// the access control entries (agent/acl). Authorize and AuthorizeAny run
// on every request and must not block: they read the agent's in-memory
// copy. The slices it returns and takes belong to the caller.
type Authorizer interface {
	// AuthorizerEnabled is false when no authorizer is configured: every
	// request is allowed and the ACL APIs answer SECURITY_DISABLED.
	AuthorizerEnabled() bool
	// Authorize decides op on the resource of type typ named name for
	// principal ("User:alice") connecting from host (an IP).
	Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool
	// AuthorizeAny decides op on at least one resource of type typ
	// (acl.AuthorizeAny).
	AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool
	// DescribeACLs returns the entries f selects, from the agent's copy.
	DescribeACLs(f acl.Filter) []acl.Entry
	// CreateACLs stores entries, validated by the caller, in one write;
	// entries already stored are not stored twice. The agent's copy has
	// them when it returns.
	CreateACLs(ctx context.Context, entries []acl.Entry) error
	// DeleteACLs removes every entry any of filters selects, in one write,
	// and returns what each filter removed, in the filters' order.
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Entry, error)
}

// Quotas holds the client quotas (agent/quota) the server enforces
// (quota.go) and AlterClientQuotas changes.
type Quotas interface {
	// ClientQuotas returns the agent's copy without blocking: every
	// request of a quota-tracked kind reads it. nil means none.
	ClientQuotas() *quota.Set
	// AlterClientQuotas applies alts, validated by the caller, in one
	// write; the agent's copy has them when it returns.
	AlterClientQuotas(ctx context.Context, alts []quota.Alteration) error
}

// ErrNoSuchCredential is returned by DeleteScramCredential for a user
// without a credential of that mechanism.
var ErrNoSuchCredential = errors.New("kafka: no such SCRAM credential")

// Backend is every family at once: what the agent implements.
type Backend interface {
	Cluster
	TopicReader
	TopicAdmin
	ProducerIDs
	Groups
	Transactions
	Reassignments
	Users
	Authorizer
	Quotas
}

// Backends are the families a Server is built from. A family left nil
// answers as an agent that has nothing of it would: no brokers and agent id
// -1, no topics, no groups, no reassignments; every call that can fail
// fails with ErrNoBackend. So a test builds a Server from the families the
// handlers under test use, and a request reaching another family gets an
// error code (UNKNOWN_SERVER_ERROR, or what no topic means) instead of a
// nil dereference.
type Backends struct {
	Cluster       Cluster
	Topics        TopicReader
	TopicAdmin    TopicAdmin
	ProducerIDs   ProducerIDs
	Groups        Groups
	Transactions  Transactions
	Reassignments Reassignments
	Users         Users
	Authorizer    Authorizer
	Quotas        Quotas
}

// BackendsOf returns every family of b.
func BackendsOf(b Backend) Backends {
	return Backends{Cluster: b, Topics: b, TopicAdmin: b, ProducerIDs: b, Groups: b, Transactions: b, Reassignments: b, Users: b, Authorizer: b, Quotas: b}
}

// Reassignment is a partition move in progress.
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Adding    []int32
	Removing  []int32
}

// Broker is one live agent as Metadata reports it.
type Broker struct {
	ID   int32
	Host string
	Port int32
	Rack *string
	// Endpoints are the agent's advertised listeners by name; Host and
	// Port are its default one (--advertised-kafka-addr).
	Endpoints []Endpoint
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
	// DataSignal is closed at this partition's next append or state
	// change; a follower's long poll waits on it alone.
	DataSignal() <-chan struct{}
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
	// TxnOpen reports whether the producer has an open transaction in
	// the log at epoch (txnverify.go).
	TxnOpen(producerID int64, epoch int16) bool
	DeleteRecordsBefore(ctx context.Context, offset int64) error
}

// Replication is the leader's side of replication: what followers ask.
type Replication interface {
	ReplicaInfo
	// OffsetForLeaderEpoch checks currentEpoch (-1: unchecked) and that
	// this replica leads, then answers where the largest epoch at or below
	// epoch ends in the log.
	OffsetForLeaderEpoch(currentEpoch, epoch int32) (int32, int64, error)
	// ReplicaRead serves a follower's fetch (docs/design.md §6): the epoch
	// fence, records up to the log end, and the fetch recorded towards the
	// HW and the ISR.
	ReplicaRead(replicaID, currentEpoch int32, offset int64, maxBytes int) (ReplicaReadResult, error)
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
