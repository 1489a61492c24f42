package kafka

// AddOffsetsToTxn (key 25), versions 0-3: adds the partition of
// __consumer_offsets that holds a group's offsets to the producer's
// transaction, so that its TxnOffsetCommit is decided with the
// transaction. PRODUCER_FENCED from v2 on, INVALID_PRODUCER_EPOCH before.
//
// Authorization (authorize.go): WRITE on the TRANSACTIONAL_ID
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the GROUP
// (GROUP_AUTHORIZATION_FAILED), as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/txn"
)

// offsetsTopicName is the group coordinators' topic.
const offsetsTopicName = "__consumer_offsets"

func handleAddOffsetsToTxn(ctx context.Context, s *Server, r *request, req *kmsg.AddOffsetsToTxnRequest) (*kmsg.AddOffsetsToTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !s.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case !s.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	index, err := s.txns.GroupOffsetsPartition(ctx, req.Group)
	if err == nil {
		var c *txn.Coordinator
		c, err = s.txns.TxnCoordinator(ctx, req.TransactionalID)
		if err == nil {
			err = c.AddPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch,
				[]txn.TopicPartition{{Topic: offsetsTopicName, Partition: index}}, false)
		}
	}
	resp.ErrorCode = txnErrorCode(err, r.version, 2)
	return resp, nil
}
