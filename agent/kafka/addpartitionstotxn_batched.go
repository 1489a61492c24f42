package kafka

// AddPartitionsToTxn (key 24), versions 4-5: the batched form partition
// leaders send to transaction coordinators (KIP-890 part 1). Each
// transaction with VerifyOnly is answered per partition: no error when
// the partition is in the ongoing transaction of that producer id and
// epoch, INVALID_TXN_STATE when not; nothing is added. Without
// VerifyOnly its partitions are added, as in versions 0-3; at version 5
// the transaction is then one of transaction version 2 (KIP-890 part 2:
// a leader adds the partition of a Produce v12 or TxnOffsetCommit v5,
// and EndTxn bumps the epoch), as Kafka 4.x records it. An error of
// the whole transaction (PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING,
// CONCURRENT_TRANSACTIONS while its markers are written, NOT_COORDINATOR)
// is given to each of its partitions. Kafka may answer
// TRANSACTION_ABORTABLE at version 5, which Strata never does.
//
// Authorization (authorize.go): CLUSTER_ACTION on the CLUSTER, as in
// Kafka (CLUSTER_AUTHORIZATION_FAILED in the top-level error code).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/txn"
)

func handleAddPartitionsToTxnBatched(ctx context.Context, s *Server, r *request, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	for _, t := range req.Transactions {
		var parts []txn.TopicPartition
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, txn.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
		codes := batchedTxnCodes(ctx, s, r.version, &t, parts)
		out := kmsg.NewAddPartitionsToTxnResponseTransaction()
		out.TransactionalID = t.TransactionalID
		i := 0
		for _, rt := range t.Topics {
			ot := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			ot.Topic = rt.Topic
			for _, p := range rt.Partitions {
				op := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				op.Partition, op.ErrorCode = p, codes[i]
				ot.Partitions = append(ot.Partitions, op)
				i++
			}
			out.Topics = append(out.Topics, ot)
		}
		resp.Transactions = append(resp.Transactions, out)
	}
	return resp
}

// batchedTxnCodes verifies or adds one transaction's partitions and
// returns their codes, in order.
func batchedTxnCodes(ctx context.Context, s *Server, version int16, t *kmsg.AddPartitionsToTxnRequestTransaction, parts []txn.TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	fill := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	c, err := s.txns.TxnCoordinator(ctx, t.TransactionalID)
	if err != nil {
		return fill(txnErrorCode(err, version, 2))
	}
	if !t.VerifyOnly {
		// Version 5 is what a leader sends for transaction version 2
		// (Kafka's transactionVersionForAddPartitionsToTxn).
		tv2 := version >= 5
		return fill(txnErrorCode(c.AddPartitions(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts, tv2), version, 2))
	}
	in, err := c.Verify(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, parts)
	if err != nil {
		return fill(txnErrorCode(err, version, 2))
	}
	for i, ok := range in {
		if !ok {
			codes[i] = kerr.InvalidTxnState.Code
		}
	}
	return codes
}
