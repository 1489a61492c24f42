package agent

// The agent's side of its group and transaction coordinators
// (agent/coord): their settings, the agent as coord.Host, and the loop
// that checks transactions. The wire server's Groups, Transactions and
// ProducerIDs families are the coordinators themselves (backends).

import (
	"context"
	"time"

	"github.com/strata-streaming/strata/agent/coord"
	"github.com/strata-streaming/strata/agent/dataplane"
)

// coordConfig is the coordinators' share of the settings; before is
// Options.TxnBeforeMarkers.
func (c Config) coordConfig(before func(transactionalID string) bool) coord.Config {
	return coord.Config{OffsetsTopicPartitions: c.OffsetsTopicPartitions, OffsetsTopicSegmentBytes: c.OffsetsTopicSegmentBytes,
		OffsetsRetention: c.OffsetsRetention, GroupInitialRebalanceDelay: c.GroupInitialRebalanceDelay,
		GroupConsumerSessionTimeout: c.GroupConsumerSessionTimeout, GroupConsumerHeartbeatInterval: c.GroupConsumerHeartbeatInterval,
		TransactionStatePartitions: c.TransactionStatePartitions, TransactionMaxTimeout: c.TransactionMaxTimeout,
		TransactionalIDExpiration: c.TransactionalIDExpiration, ProducerIDBlock: c.ProducerIDBlock, TxnBeforeMarkers: before,
		DisklessStatePartitions: c.Diskless.StatePartitions, DisklessCommitTimeout: c.Diskless.Writer.CommitTimeout}
}

// coordHost implements coord.Host.
type coordHost struct{ a *Agent }

var _ coord.Host = coordHost{}

func (h coordHost) Brokers() []dataplane.Broker { return h.a.Brokers() }

func (h coordHost) AgentAddr(ctx context.Context, id int32) (string, error) {
	return h.a.ctl.AgentAddr(ctx, id)
}

func (h coordHost) WriteDisklessMarker(ctx context.Context, topicID [16]byte, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	return h.a.diskless.WriteMarker(ctx, topicID, partition, producerID, epoch, commit, coordinatorEpoch)
}

// txnLoop runs coord.Coordinators.CheckTransactions (a new leader
// completes what its predecessor prepared, timed-out transactions abort,
// expired transactional ids go) each --transaction-abort-check-interval.
// A round in progress when the agent stops finishes: its minute is not
// cut short.
func (a *Agent) txnLoop() {
	a.every(a.cfg.TransactionAbortCheckInterval, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a.coords.CheckTransactions(ctx)
	})
}
