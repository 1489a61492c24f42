package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/txn"
)

// registerTxns serves the transaction APIs (docs/design.md §9), up to
// Kafka 4.x's transaction version 2 (KIP-890 part 2, finalized in
// ApiVersions): EndTxn v5 bumps the epoch per transaction,
// TxnOffsetCommit v5 and Produce v12 add their partition to the
// transaction themselves. AddPartitionsToTxn v4-5 is the batched form
// partition leaders send each other (agent/txn's Router); clients use v3 at
// most. TxnOffsetCommit v6 (topic ids) is not served.
func registerTxns() {
	register(22, 0, 5, typed(handleInitProducerID))
	register(24, 0, 5, typed(handleAddPartitionsToTxn))
	register(25, 0, 3, typed(handleAddOffsetsToTxn))
	register(26, 0, 5, typed(handleEndTxn))
	register(27, 0, 1, typed(handleWriteTxnMarkers))
	register(28, 0, 5, typed(handleTxnOffsetCommit))
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
