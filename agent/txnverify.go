package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/agent/txn"
)

// VerifyTxn implements kafka.Transactions (KIP-890, see
// agent/kafka/txnverify.go): the coordinator of transactionalID answers
// whether the partition is in the producer's ongoing transaction (part
// 1), or with add adds it (part 2, transaction version 2), directly when
// it runs here, else over the inter-agent listener (its TLS and SASL)
// with AddPartitionsToTxn v4 or v5 on the pooled connections markers
// travel on (a.peers). A coordinator that
// cannot be reached is ErrCoordinatorNotAvailable, which the producer
// retries.
func (a *Agent) VerifyTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	e, err := a.ensureTxnTopic(ctx)
	if err != nil {
		return err
	}
	index := group.Partition(transactionalID, e.meta.Partitions)
	if int(index) >= len(e.snap.Partitions) {
		return fmt.Errorf("%w: %s-%d is not open here", kafka.ErrCoordinatorNotAvailable, txnTopic, index)
	}
	leader := e.snap.Partitions[index].Leader()
	if leader == a.id {
		c, err := a.TxnCoordinator(ctx, transactionalID)
		if err != nil {
			return err
		}
		parts := []txn.TopicPartition{{Topic: topic, Partition: partition}}
		if add {
			return c.AddPartitions(ctx, transactionalID, producerID, epoch, parts, true)
		}
		in, err := c.Verify(ctx, transactionalID, producerID, epoch, parts)
		if err != nil {
			return err
		}
		if !in[0] {
			return fmt.Errorf("%w: %s-%d is not in the transaction of %q", txn.ErrInvalidTxnState, topic, partition, transactionalID)
		}
		return nil
	}
	addr, err := a.ctl.AgentAddr(ctx, leader)
	if err != nil {
		return errors.Join(kafka.ErrCoordinatorNotAvailable, err)
	}
	err = a.peers.Do(ctx, leader, addr, func(c *peer.Client) error {
		return c.VerifyTxn(ctx, transactionalID, producerID, epoch, topic, partition, add)
	})
	if ke := (*kerr.Error)(nil); err != nil && !errors.As(err, &ke) {
		// The connection failed (or could not be made), not the
		// coordinator: retriable.
		return errors.Join(kafka.ErrCoordinatorNotAvailable, err)
	}
	return err
}
