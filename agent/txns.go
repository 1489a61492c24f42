package agent

// The transaction coordinators (agent/txn), one per partition of
// __transaction_state led here, wired as the group coordinators are
// (groups.go): state in the partition, loaded on the first request that
// needs it and, so that a coordinator that took over completes what its
// predecessor prepared without waiting for a client, by txnLoop too.
// Verifications and markers that cross agents go through a.txnRouter
// (txn.Router), which sees the agent as txnHost; the verification guards
// are the partitions' (agent/partition/txnguard.go).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/kafka"
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
func (a *Agent) ensureTxnTopic(ctx context.Context) (*topics.Entry, error) {
	return a.topics.EnsureInternal(ctx, txnTopic, a.cfg.TransactionStatePartitions, txnTopicConfigs)
}

// FindTxnCoordinator implements kafka.Transactions.
func (a *Agent) FindTxnCoordinator(ctx context.Context, transactionalID string) (kafka.Broker, error) {
	e, err := a.ensureTxnTopic(ctx)
	if err != nil {
		return kafka.Broker{}, err
	}
	return a.leaderBroker(e, group.Partition(transactionalID, e.Meta.Partitions))
}

// TxnCoordinator implements kafka.Transactions.
func (a *Agent) TxnCoordinator(ctx context.Context, transactionalID string) (*txn.Coordinator, error) {
	if transactionalID == "" {
		return nil, txn.ErrInvalidTransactionalID
	}
	e, err := a.ensureTxnTopic(ctx)
	if err != nil {
		return nil, err
	}
	index := group.Partition(transactionalID, e.Meta.Partitions)
	for _, p := range e.Parts {
		if p.Index() == index {
			return a.loadTxnCoordinator(ctx, p)
		}
	}
	return nil, fmt.Errorf("%w: %s-%d has no replica here", kafka.ErrNotCoordinator, txnTopic, index)
}

// loadTxnCoordinator returns the coordinator of p, which must be led
// here, replaying p if it is not loaded at p's current leader epoch.
func (a *Agent) loadTxnCoordinator(ctx context.Context, p *partition.Partition) (*txn.Coordinator, error) {
	return a.txnCoords.get(p, a.id, txnTopic, txn.ErrClosed, func(epoch int32) (*txn.Coordinator, error) {
		cfg := txn.DefaultConfig()
		cfg.MaxTimeout = a.cfg.TransactionMaxTimeout
		cfg.IDExpiration = a.cfg.TransactionalIDExpiration
		cfg.CoordinatorEpoch = epoch
		cfg.Markers = a.txnRouter
		cfg.ProducerIDs = a
		cfg.BeforeMarkers = a.txnBeforeMarkers
		cfg.Metrics = a.txnMetrics
		c, err := txn.Load(ctx, p.Index(), offsetsLog{p}, cfg, a.logger.With("component", "txn", "partition", p.Index()))
		if err != nil {
			return nil, errors.Join(kafka.ErrCoordinatorNotAvailable, err)
		}
		return c, nil
	})
}

// TxnCoordinators implements kafka.Transactions.
func (a *Agent) TxnCoordinators() []*txn.Coordinator { return a.txnCoords.all(nil) }

// GroupOffsetsPartition implements kafka.Transactions.
func (a *Agent) GroupOffsetsPartition(ctx context.Context, groupID string) (int32, error) {
	e, err := a.ensureOffsetsTopic(ctx)
	if err != nil {
		return -1, err
	}
	return group.Partition(groupID, e.Meta.Partitions), nil
}

// unloadTxnCoordinator stops the coordinator of a partition this agent no
// longer leads: its marker writers stop, and the new leader's coordinator
// resumes them from the log.
func (a *Agent) unloadTxnCoordinator(index int32) {
	if a.txnCoords.unload(index) {
		a.logger.Info("transaction coordinator unloaded: the partition is led elsewhere", "partition", index)
	}
}

// txnLoop loads the coordinator of every partition of
// __transaction_state led here (a new leader thus completes the
// transactions its predecessor prepared), aborts the transactions open
// past their timeout and forgets expired transactional ids, each
// --transaction-abort-check-interval.
func (a *Agent) txnLoop() {
	a.every(a.cfg.TransactionAbortCheckInterval, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e, ok := a.entry(txnTopic)
		if !ok {
			return
		}
		for _, p := range e.Parts {
			if p.Leader() != a.id {
				continue
			}
			c, err := a.loadTxnCoordinator(ctx, p)
			if err != nil {
				if !errors.Is(err, group.ErrLoading) && !errors.Is(err, kafka.ErrNotCoordinator) && !errors.Is(err, txn.ErrClosed) {
					a.logger.Warn("load transaction coordinator", "partition", p.Index(), "err", err)
				}
				continue
			}
			if _, err := c.AbortTimedOut(ctx); err != nil && !errors.Is(err, txn.ErrClosed) {
				a.logger.Warn("abort timed-out transactions", "partition", p.Index(), "err", err)
			}
			if n, err := c.ExpireIDs(ctx); err != nil && !errors.Is(err, txn.ErrClosed) {
				a.logger.Warn("expire transactional ids", "partition", p.Index(), "err", err)
			} else if n > 0 {
				a.logger.Info("expired transactional ids", "partition", p.Index(), "ids", n)
			}
		}
	})
}

// WriteTxnMarker implements kafka.Transactions: the marker goes through
// the leader's append path, so followers copy it and acks=all holds. The
// partition removes the producer's verification guard under the lock of
// the append (KIP-890, agent/partition/txnguard.go); the wait for
// acks=all runs outside it.
func (a *Agent) WriteTxnMarker(ctx context.Context, topic string, index int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	e, ok := a.entry(topic)
	if !ok {
		return kafka.ErrUnknownTopicOrPartition
	}
	var p *partition.Partition
	for _, q := range e.Parts {
		if q.Index() == index {
			p = q
		}
	}
	if p == nil {
		return fmt.Errorf("%w: %s-%d has no replica here", kafka.ErrNotLeader, topic, index)
	}
	if p.Leader() != a.id {
		return fmt.Errorf("%w: %s-%d is led by agent %d", kafka.ErrNotLeader, topic, index, p.Leader())
	}
	wait, err := p.AppendTxnMarker(producerID, epoch, commit, coordinatorEpoch)
	if err == nil {
		err = wait(ctx)
	}
	if err != nil {
		return err
	}
	if topic == offsetsTopic {
		a.completeTxnOffsets(index, producerID, commit)
	}
	return nil
}

// completeTxnOffsets applies or drops a producer's pending offsets in the
// group coordinator of a __consumer_offsets partition, once its marker is
// committed. A coordinator not loaded yet reads the marker when it loads.
func (a *Agent) completeTxnOffsets(index int32, producerID int64, commit bool) {
	if c, ok := a.coords.loaded(index); ok {
		c.CompleteTxnOffsets(producerID, commit)
	}
}

// VerifyTxn implements kafka.Transactions (KIP-890): the Router asks the
// coordinator of transactionalID, here or on its agent.
func (a *Agent) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	return a.txnRouter.VerifyTxn(ctx, transactionalID, producerID, epoch, topic, partition, add)
}

// txnHost is the agent as its txn.Router sees it.
type txnHost struct{ a *Agent }

var _ txn.Host = txnHost{}

func (h txnHost) AgentID() int32 { return h.a.id }

func (h txnHost) CoordinatorLeader(ctx context.Context, transactionalID string) (int32, error) {
	e, err := h.a.ensureTxnTopic(ctx)
	if err != nil {
		return -1, err
	}
	index := group.Partition(transactionalID, e.Meta.Partitions)
	if int(index) >= len(e.Snap.Partitions) {
		return -1, fmt.Errorf("%w: %s-%d is not open here", kafka.ErrCoordinatorNotAvailable, txnTopic, index)
	}
	return e.Snap.Partitions[index].Leader(), nil
}

func (h txnHost) Coordinator(ctx context.Context, transactionalID string) (*txn.Coordinator, error) {
	return h.a.TxnCoordinator(ctx, transactionalID)
}

func (h txnHost) PartitionLeader(topic string, partition int32) (int32, bool) {
	e, ok := h.a.entry(topic)
	if !ok || partition < 0 || int(partition) >= len(e.Snap.Partitions) {
		return -1, false
	}
	return e.Snap.Partitions[partition].Leader(), true
}

func (h txnHost) AgentAddr(ctx context.Context, id int32) (string, error) {
	return h.a.ctl.AgentAddr(ctx, id)
}

func (h txnHost) WriteMarker(ctx context.Context, topic string, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	return h.a.WriteTxnMarker(ctx, topic, partition, producerID, epoch, commit, coordinatorEpoch)
}
