package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/group"
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
// without a credential of that mechanism: the store's error.
var ErrNoSuchCredential = metadata.ErrUnknownCredential

// Diskless is the diskless batch coordinators (agent/coord), whose
// private requests the wire server answers for other agents.
type Diskless interface {
	// DisklessCoordinator returns the coordinator of diskless partition
	// (topicID, partition), loaded here (ErrNotCoordinator when its
	// partition of __diskless_state is led elsewhere).
	DisklessCoordinator(ctx context.Context, topicID [16]byte, partition int32) (*batchcoord.Coordinator, error)
	// DisklessReferences reports, per id, whether a coordinator led here
	// references the commit object; an error when one could not be asked.
	DisklessReferences(ctx context.Context, ids [][16]byte) ([]bool, error)
}

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
	Diskless
	ReplicaLinks
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
	Diskless      Diskless
	Followers     ReplicaLinks
}

// BackendsOf returns every family of b.
func BackendsOf(b Backend) Backends {
	return Backends{Cluster: b, Topics: b, TopicAdmin: b, ProducerIDs: b, Groups: b, Transactions: b, Reassignments: b, Users: b, Authorizer: b, Quotas: b, Diskless: b, Followers: b}
}

// The data plane's vocabulary (agent/dataplane), by the names the
// handlers use.
type (
	Broker              = dataplane.Broker
	Endpoint            = dataplane.Endpoint
	Reassignment        = dataplane.Reassignment
	Reassignments       = dataplane.Reassignments
	Topic               = dataplane.Topic
	AppendWait          = dataplane.AppendWait
	VerifyTxn           = dataplane.VerifyTxn
	ReplicaInfo         = dataplane.ReplicaInfo
	PartitionReader     = dataplane.PartitionReader
	PartitionWriter     = dataplane.PartitionWriter
	Replication         = dataplane.Replication
	Partition           = dataplane.Partition
	ReplicaReadResult   = dataplane.ReplicaReadResult
	DecompressionChecks = dataplane.DecompressionChecks
	DeferredWriter      = dataplane.DeferredWriter
	OffsetsRefresher    = dataplane.OffsetsRefresher
)

// Errors the data plane returns that map to specific Kafka codes
// (errorCode).
var (
	ErrUnknownTopicOrPartition     = dataplane.ErrUnknownTopicOrPartition
	ErrNotLeader                   = dataplane.ErrNotLeader
	ErrNotEnoughReplicas           = dataplane.ErrNotEnoughReplicas
	ErrTopicBeingDeleted           = dataplane.ErrTopicBeingDeleted
	ErrNotCoordinator              = dataplane.ErrNotCoordinator
	ErrCoordinatorNotAvailable     = dataplane.ErrCoordinatorNotAvailable
	ErrElectionNotNeeded           = dataplane.ErrElectionNotNeeded
	ErrPreferredLeaderNotAvailable = dataplane.ErrPreferredLeaderNotAvailable
)
