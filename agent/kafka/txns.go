package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/txn"
)

// registerTxns serves the transaction APIs (docs/design.md §9). The
// version ranges are the ones that behave as Kafka's transaction
// version 1: EndTxn v5 and TxnOffsetCommit v5 belong to KIP-890 part 2's
// epoch bump per transaction, which Strata does not serve.
// AddPartitionsToTxn v4-5 is part 1's verification, which partition
// leaders send each other (txnverify.go); clients use v3 at most.
func registerTxns() {
	register(22, 0, 5, typed(handleInitProducerID))
	register(24, 0, 5, typed(handleAddPartitionsToTxn))
	register(25, 0, 3, typed(handleAddOffsetsToTxn))
	register(26, 0, 4, typed(handleEndTxn))
	register(27, 0, 1, typed(handleWriteTxnMarkers))
	register(28, 0, 4, typed(handleTxnOffsetCommit))
	register(65, 0, 0, typed(handleDescribeTransactions))
	register(66, 0, 1, typed(handleListTransactions))
}

// txnErrorCode is errorCode for the transaction APIs: a fenced producer
// gets PRODUCER_FENCED from version fencedSince of the API on, and
// INVALID_PRODUCER_EPOCH before it, as Kafka answers (KIP-588).
func txnErrorCode(err error, version, fencedSince int16) int16 {
	if errors.Is(err, txn.ErrProducerFenced) && version < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return errorCode(err)
}
