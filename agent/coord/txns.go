package coord

// The transaction coordinators (agent/txn), one per partition of
// __transaction_state led here, loaded as the group coordinators are
// (groups.go) and, so that a coordinator that took over completes what
// its predecessor prepared without waiting for a client, by
// CheckTransactions too. Verifications and markers that cross agents go
// through the Router (txn.Router), which sees this package as routerHost;
// the verification guards are the partitions' (agent/partition/txnguard.go).

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/topics"
	"github.com/strata-streaming/strata/agent/txn"
)

// txnTopic is the internal topic whose partitions hold the transaction
// coordinators' state; partition group.Partition(id, N) coordinates
// transactional id id, Kafka's hash for both topics.
const txnTopic = topics.TransactionState

// txnTopicConfigs: __transaction_state is compacted, as in Kafka: a
// coordinator needs only the newest record of each transactional id (and
// an expired id's tombstone until the cleaner drops it). Segments are
// Kafka's transaction.state.log.segment.bytes default, 100 MiB. A
// compacted topic is not tiered.
var txnTopicConfigs = map[string]string{metadata.CleanupPolicy: "compact", metadata.SegmentBytes: strconv.Itoa(100 << 20)}

// ensureTxnTopic returns __transaction_state, creating it on first use
// with --transaction-state-partitions partitions.
func (c *Coordinators) ensureTxnTopic(ctx context.Context) (*topics.Entry, error) {
	return c.table.EnsureInternal(ctx, txnTopic, c.cfg.TransactionStatePartitions, txnTopicConfigs)
}

// FindTxnCoordinator implements kafka.Transactions.
func (c *Coordinators) FindTxnCoordinator(ctx context.Context, transactionalID string) (dataplane.Broker, error) {
	e, err := c.ensureTxnTopic(ctx)
	if err != nil {
		return dataplane.Broker{}, err
	}
	return c.leaderBroker(e, group.Partition(transactionalID, e.Meta.Partitions))
}

// TxnCoordinator implements kafka.Transactions.
func (c *Coordinators) TxnCoordinator(ctx context.Context, transactionalID string) (*txn.Coordinator, error) {
	if transactionalID == "" {
		return nil, txn.ErrInvalidTransactionalID
	}
	e, err := c.ensureTxnTopic(ctx)
	if err != nil {
		return nil, err
	}
	index := group.Partition(transactionalID, e.Meta.Partitions)
	for _, p := range e.Parts {
		if p.Index() == index {
			return c.loadTxnCoordinator(ctx, p)
		}
	}
	return nil, fmt.Errorf("%w: %s-%d has no replica here", dataplane.ErrNotCoordinator, txnTopic, index)
}

// loadTxnCoordinator returns the coordinator of p, which must be led
// here, replaying p if it is not loaded at p's current leader epoch.
func (c *Coordinators) loadTxnCoordinator(ctx context.Context, p *partition.Partition) (*txn.Coordinator, error) {
	return c.txns.get(p, func(epoch int32) (*txn.Coordinator, error) {
		cfg := txn.DefaultConfig()
		cfg.MaxTimeout = c.cfg.TransactionMaxTimeout
		cfg.IDExpiration = c.cfg.TransactionalIDExpiration
		cfg.CoordinatorEpoch = epoch
		cfg.Markers = c.router
		cfg.ProducerIDs = c
		cfg.BeforeMarkers = c.cfg.TxnBeforeMarkers
		cfg.Metrics = c.metrics
		t, err := txn.Load(ctx, p.Index(), partitionLog{p}, cfg, c.logger.With("component", "txn", "partition", p.Index()))
		if err != nil {
			return nil, errors.Join(dataplane.ErrCoordinatorNotAvailable, err)
		}
		return t, nil
	})
}

// TxnCoordinators implements kafka.Transactions.
func (c *Coordinators) TxnCoordinators() []*txn.Coordinator { return c.txns.all(nil) }

// GroupOffsetsPartition implements kafka.Transactions.
func (c *Coordinators) GroupOffsetsPartition(ctx context.Context, groupID string) (int32, error) {
	e, err := c.ensureOffsetsTopic(ctx)
	if err != nil {
		return -1, err
	}
	return group.Partition(groupID, e.Meta.Partitions), nil
}

// CheckTransactions loads the coordinator of every partition of
// __transaction_state led here (a new leader thus completes the
// transactions its predecessor prepared), aborts the transactions open
// past their timeout and forgets expired transactional ids. The agent
// calls it each --transaction-abort-check-interval.
func (c *Coordinators) CheckTransactions(ctx context.Context) {
	e, ok := c.table.Entry(txnTopic)
	if !ok {
		return
	}
	for _, p := range e.Parts {
		if p.Leader() != c.id {
			continue
		}
		t, err := c.loadTxnCoordinator(ctx, p)
		if err != nil {
			if !errors.Is(err, group.ErrLoading) && !errors.Is(err, dataplane.ErrNotCoordinator) && !errors.Is(err, txn.ErrClosed) {
				c.logger.Warn("load transaction coordinator", "partition", p.Index(), "err", err)
			}
			continue
		}
		if _, err := t.AbortTimedOut(ctx); err != nil && !errors.Is(err, txn.ErrClosed) {
			c.logger.Warn("abort timed-out transactions", "partition", p.Index(), "err", err)
		}
		if n, err := t.ExpireIDs(ctx); err != nil && !errors.Is(err, txn.ErrClosed) {
			c.logger.Warn("expire transactional ids", "partition", p.Index(), "err", err)
		} else if n > 0 {
			c.logger.Info("expired transactional ids", "partition", p.Index(), "ids", n)
		}
	}
}

// WriteTxnMarker implements kafka.Transactions: the marker goes through
// the leader's append path, so followers copy it and acks=all holds. The
// partition removes the producer's verification guard under the lock of
// the append (KIP-890, agent/partition/txnguard.go); the wait for
// acks=all runs outside it.
func (c *Coordinators) WriteTxnMarker(ctx context.Context, topic string, index int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	e, ok := c.table.Entry(topic)
	if !ok {
		return dataplane.ErrUnknownTopicOrPartition
	}
	if e.Meta.Diskless() {
		// Every agent serves a diskless partition; its batch coordinator
		// commits the marker.
		if index < 0 || index >= e.Meta.Partitions {
			return dataplane.ErrUnknownTopicOrPartition
		}
		return c.host.WriteDisklessMarker(ctx, e.Meta.ID, index, producerID, epoch, commit, coordinatorEpoch)
	}
	var p *partition.Partition
	for _, q := range e.Parts {
		if q.Index() == index {
			p = q
		}
	}
	if p == nil {
		return fmt.Errorf("%w: %s-%d has no replica here", dataplane.ErrNotLeader, topic, index)
	}
	if p.Leader() != c.id {
		return fmt.Errorf("%w: %s-%d is led by agent %d", dataplane.ErrNotLeader, topic, index, p.Leader())
	}
	wait, err := p.AppendTxnMarker(producerID, epoch, commit, coordinatorEpoch)
	if err == nil {
		err = wait(ctx)
	}
	if err != nil {
		return err
	}
	if topic == offsetsTopic {
		c.completeTxnOffsets(index, producerID, commit)
	}
	return nil
}

// completeTxnOffsets applies or drops a producer's pending offsets in the
// group coordinator of a __consumer_offsets partition, once its marker is
// committed. A coordinator not loaded yet reads the marker when it loads.
func (c *Coordinators) completeTxnOffsets(index int32, producerID int64, commit bool) {
	if g, ok := c.groups.loaded(index); ok {
		g.CompleteTxnOffsets(producerID, commit)
	}
}

// VerifyTxn implements kafka.Transactions (KIP-890): the Router asks the
// coordinator of transactionalID, here or on its agent.
func (c *Coordinators) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	return c.router.VerifyTxn(ctx, transactionalID, producerID, epoch, topic, partition, add)
}

// routerHost is the agent as its txn.Router sees it.
type routerHost struct{ c *Coordinators }

var _ txn.Host = routerHost{}

func (h routerHost) AgentID() int32 { return h.c.id }

func (h routerHost) CoordinatorLeader(ctx context.Context, transactionalID string) (int32, error) {
	e, err := h.c.ensureTxnTopic(ctx)
	if err != nil {
		return -1, err
	}
	index := group.Partition(transactionalID, e.Meta.Partitions)
	if int(index) >= len(e.Snap.Partitions) {
		return -1, fmt.Errorf("%w: %s-%d is not open here", dataplane.ErrCoordinatorNotAvailable, txnTopic, index)
	}
	return e.Snap.Partitions[index].Leader(), nil
}

func (h routerHost) Coordinator(ctx context.Context, transactionalID string) (*txn.Coordinator, error) {
	return h.c.TxnCoordinator(ctx, transactionalID)
}

func (h routerHost) PartitionLeader(topic string, partition int32) (int32, bool) {
	e, ok := h.c.table.Entry(topic)
	if !ok || partition < 0 || int(partition) >= len(e.Snap.Partitions) {
		return -1, false
	}
	return e.Snap.Partitions[partition].Leader(), true
}

func (h routerHost) AgentAddr(ctx context.Context, id int32) (string, error) {
	return h.c.host.AgentAddr(ctx, id)
}

func (h routerHost) WriteMarker(ctx context.Context, topic string, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	return h.c.WriteTxnMarker(ctx, topic, partition, producerID, epoch, commit, coordinatorEpoch)
}
