package kafka

// KIP-890 on the partition leader, as the wire server takes part in it:
// a Produce passes the partition a verify function (produceCall.verifyTxn)
// that asks the coordinator of the request's transactional id, through
// Transactions.VerifyTxn, whether the partition is in the producer's
// ongoing transaction (part 1), or adds it (Produce v12+, part 2); the
// partition owns the verification guards that close the race with the
// transaction's markers (agent/partition/txnguard.go). TxnOffsetCommit
// v5 adds the group's __consumer_offsets partition the same way
// (txnoffsetcommit.go).
//
// verifyError maps the coordinator's answer to Produce's codes, as
// Kafka's leaders give them to producers. It stays here rather than with
// the guards because it is the protocol boundary: it reads Kafka error
// codes off errors from agent/txn and from other agents, which the
// partition, below both, does not know. Answers: INVALID_TXN_STATE when
// the partition is not in the transaction (verification only); the
// coordinator's retriable errors (CONCURRENT_TRANSACTIONS,
// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS, a network failure) become
// NOT_ENOUGH_REPLICAS, which every producer retries without a metadata
// refresh; a fenced epoch is INVALID_PRODUCER_EPOCH, Produce's fencing
// code. The partition adds its own answers when a marker overtook the
// verification (txnguard.go).

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/txn"
)

// verifyTxn is the partition's verify function for one partition of a
// Produce: nil without a transactional id, which the partition refuses
// before it would verify.
func (c *produceCall) verifyTxn(topic string, partition int32) VerifyTxn {
	if c.txnID == nil {
		return nil
	}
	return func(ctx context.Context, producerID int64, epoch int16) error {
		return verifyError(c.s.txns.VerifyTxn(ctx, *c.txnID, producerID, epoch, topic, partition, c.txnAdd))
	}
}

// verifyError is the Produce answer to a failed verification (see the
// file comment); nil stays nil.
func verifyError(err error) error {
	if err == nil {
		return nil
	}
	switch errorCode(err) {
	case kerr.InvalidTxnState.Code:
		return fmt.Errorf("%w: the partition is not in the producer's transaction: %w", kerr.InvalidTxnState, err)
	case kerr.ConcurrentTransactions.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.CoordinatorLoadInProgress.Code, kerr.NetworkException.Code, kerr.RequestTimedOut.Code:
		return fmt.Errorf("%w: could not verify the partition is in the transaction: %w", kerr.NotEnoughReplicas, err)
	case kerr.ProducerFenced.Code:
		return fmt.Errorf("%w: %w", kerr.InvalidProducerEpoch, err)
	}
	if errors.Is(err, txn.ErrClosed) {
		return fmt.Errorf("%w: %w", kerr.NotEnoughReplicas, err)
	}
	return err
}
