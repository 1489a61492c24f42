package kafka

// AddPartitionsToTxn (key 24), versions 0-3: the client's form, which adds
// partitions to the producer's transaction before it produces to them.
// Versions 4-5, the batched form partition leaders send to verify a
// transactional produce (KIP-890 part 1), are in
// addpartitionstotxn_batched.go.
//
// Difference from Kafka: while the previous transaction's markers are
// still being written, the request waits for them (up to 500 ms,
// agent/txn's concurrentWait) instead of answering CONCURRENT_TRANSACTIONS
// at once; AddOffsetsToTxn likewise. Clients send it as soon as EndTxn
// answers, and the retry of that error would cost them their backoff.
//
// Every partition gets the same answer. A partition of a topic that does
// not exist is UNKNOWN_TOPIC_OR_PARTITION and fails the request, the
// others getting OPERATION_NOT_ATTEMPTED, as in Kafka. PRODUCER_FENCED
// from v2 on, INVALID_PRODUCER_EPOCH before.
//
// Authorization (authorize.go): WRITE on the TRANSACTIONAL_ID
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), then WRITE
// on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions, the others
// OPERATION_NOT_ATTEMPTED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/txn"
)

func handleAddPartitionsToTxn(ctx context.Context, s *Server, r *request, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	if r.version >= 4 {
		return handleAddPartitionsToTxnBatched(ctx, s, r, req), nil
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	// perPartition answers each partition with its own code, or code.
	perPartition := map[txn.TopicPartition]int16{}
	var parts []txn.TopicPartition
	code := int16(0)
	if !s.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		code = kerr.TransactionalIDAuthorizationFailed.Code
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			parts = append(parts, tp)
			if code != 0 {
				continue
			}
			if !s.authorizedTopic(r, kmsg.ACLOperationWrite, t.Topic) {
				perPartition[tp] = kerr.TopicAuthorizationFailed.Code
				continue
			}
			if topic, ok := s.topics.Topic(t.Topic); !ok || p < 0 || p >= topic.PartitionCount || topic.Internal {
				perPartition[tp] = kerr.UnknownTopicOrPartition.Code
			}
		}
	}
	switch {
	case code != 0:
	case len(perPartition) > 0:
		code = kerr.OperationNotAttempted.Code
	default:
		c, err := s.txns.TxnCoordinator(ctx, req.TransactionalID)
		if err == nil {
			err = c.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, false)
		}
		code = txnErrorCode(err, r.version, 2)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			if c, ok := perPartition[txn.TopicPartition{Topic: t.Topic, Partition: p}]; ok {
				rp.ErrorCode = c
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
