package coord

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/topics"
	"github.com/strata-streaming/strata/agent/txn"
)

// Host is the agent as its coordinators see it. The agent root
// implements it; every method is safe for concurrent use, and what it
// returns belongs to the caller.
type Host interface {
	// Brokers are the live agents, this one included: FindCoordinator
	// answers with the one that leads a coordinator's partition.
	Brokers() []dataplane.Broker
	// AgentAddr is another agent's inter-agent address
	// (control.Controller.AgentAddr), where the Router sends
	// verifications and markers.
	AgentAddr(ctx context.Context, id int32) (string, error)
	// WriteDisklessMarker commits a transaction marker to a diskless
	// partition through its batch coordinator (agent/diskless).
	WriteDisklessMarker(ctx context.Context, topicID [16]byte, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error
}

// Table is the agent's topic table (*topics.Table) as the coordinators
// use it: their internal topics, created on first use, the partitions
// markers go to, and the topics KIP-848 assignors see. Safe for
// concurrent use; entries and snapshots are immutable and must not be
// changed (agent/topics, "Entries").
type Table interface {
	// EnsureInternal returns an internal topic, creating it with
	// partitions and configs on first use.
	EnsureInternal(ctx context.Context, name string, partitions int32, configs map[string]string) (*topics.Entry, error)
	Entry(name string) (*topics.Entry, bool)
	Topics() []*dataplane.Topic
	Topic(name string) (*dataplane.Topic, bool)
	TopicByID(id [16]byte) (*dataplane.Topic, bool)
}

var _ Table = (*topics.Table)(nil)

// Config is the coordinators' share of the agent's settings; each field
// is the agent's flag of the same name (agent.Config).
type Config struct {
	// OffsetsTopicPartitions and OffsetsTopicSegmentBytes are
	// __consumer_offsets' partition count and segment.bytes when it is
	// created.
	OffsetsTopicPartitions   int32
	OffsetsTopicSegmentBytes int32
	// OffsetsRetention, GroupInitialRebalanceDelay,
	// GroupConsumerSessionTimeout and GroupConsumerHeartbeatInterval go
	// into every group coordinator's group.Config.
	OffsetsRetention               time.Duration
	GroupInitialRebalanceDelay     time.Duration
	GroupConsumerSessionTimeout    time.Duration
	GroupConsumerHeartbeatInterval time.Duration
	// TransactionStatePartitions is __transaction_state's partition count
	// when it is created.
	TransactionStatePartitions int32
	// TransactionMaxTimeout and TransactionalIDExpiration go into every
	// transaction coordinator's txn.Config.
	TransactionMaxTimeout     time.Duration
	TransactionalIDExpiration time.Duration
	// DisklessStatePartitions is __diskless_state's partition count when
	// it is created; DisklessCommitTimeout goes into every batch
	// coordinator's batchcoord.Config.
	DisklessStatePartitions int32
	DisklessCommitTimeout   time.Duration
	// ProducerIDBlock is how many producer ids are reserved in the store
	// at a time.
	ProducerIDBlock int64
	// TxnBeforeMarkers is txn.Config.BeforeMarkers, a test hook
	// (agent.Options.TxnBeforeMarkers); nil in production.
	TxnBeforeMarkers func(transactionalID string) bool
}

// Coordinators are the coordinators loaded on this agent and the
// producer ids it hands out (package comment).
type Coordinators struct {
	id      int32 // this agent's
	cfg     Config
	table   Table
	host    Host
	router  *txn.Router  // verifications and markers between agents
	metrics *txn.Metrics // shared by the transaction coordinators
	logger  *slog.Logger

	groups   *set[*group.Coordinator]
	txns     *set[*txn.Coordinator]
	diskless *set[*batchcoord.Coordinator]
	pids     producerIDs
}

// New returns the coordinators of agent id, none loaded yet. Producer id
// blocks are reserved in store; peers are the agent's connections to
// the others, which it closes after Close; the transaction coordinators'
// metrics register on reg.
func New(id int32, cfg Config, table Table, host Host, store *metadata.Store, peers txn.Peers, reg prometheus.Registerer, logger *slog.Logger) *Coordinators {
	c := &Coordinators{id: id, cfg: cfg, table: table, host: host, metrics: txn.NewMetrics(reg), logger: logger,
		groups:   newSet[*group.Coordinator](offsetsTopic, id, group.ErrClosed),
		txns:     newSet[*txn.Coordinator](txnTopic, id, txn.ErrClosed),
		diskless: newSet[*batchcoord.Coordinator](disklessTopic, id, batchcoord.ErrClosed),
		pids:     producerIDs{store: store, block: cfg.ProducerIDBlock}}
	c.router = txn.NewRouter(routerHost{c}, peers)
	reg.MustRegister(newDisklessCollector(c))
	return c
}

// Unload stops the coordinator of partition index of topic, which this
// agent no longer leads (or no longer holds), so that it neither acts on
// stale memory nor writes while the new leader's coordinator does: a
// group coordinator no longer expires members, a transaction
// coordinator's marker writers stop and the new leader resumes them from
// the log. Other topics are ignored.
func (c *Coordinators) Unload(topic string, index int32) {
	switch topic {
	case offsetsTopic:
		if c.groups.unload(index) {
			c.logger.Info("group coordinator unloaded: the partition is led elsewhere", "partition", index)
		}
	case txnTopic:
		if c.txns.unload(index) {
			c.logger.Info("transaction coordinator unloaded: the partition is led elsewhere", "partition", index)
		}
	case disklessTopic:
		if c.diskless.unload(index) {
			c.logger.Info("batch coordinator unloaded: the partition is led elsewhere", "partition", index)
		}
	}
}

// Close stops the transaction coordinators, waiting for their marker
// writers, then the group coordinators; later lookups fail with
// txn.ErrClosed or group.ErrClosed. It may be called twice.
func (c *Coordinators) Close() {
	c.txns.close()
	c.groups.close()
	c.diskless.close()
}
