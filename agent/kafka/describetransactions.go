package kafka

// DescribeTransactions (key 65), version 0: the coordinator's state of
// each transactional id (KIP-664). An id this agent does not coordinate
// is NOT_COORDINATOR, one it does not know TRANSACTIONAL_ID_NOT_FOUND, as
// in Kafka.
//
// Authorization (authorize.go): DESCRIBE on each TRANSACTIONAL_ID
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); partitions of topics the
// principal may not DESCRIBE are left out of the answer, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeTransactions(ctx context.Context, s *Server, r *request, req *kmsg.DescribeTransactionsRequest) (*kmsg.DescribeTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		resp.TransactionStates = append(resp.TransactionStates, st)
		rs := &resp.TransactionStates[len(resp.TransactionStates)-1]
		if !s.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			rs.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			continue
		}
		c, err := s.txns.TxnCoordinator(ctx, id)
		if err != nil {
			rs.ErrorCode = txnErrorCode(err, r.version, 0)
			continue
		}
		m, ok := c.Describe(id)
		if !ok {
			rs.ErrorCode = kerr.TransactionalIDNotFound.Code
			continue
		}
		rs.State, rs.TimeoutMillis = m.State.String(), int32(m.Timeout.Milliseconds())
		rs.ProducerID, rs.ProducerEpoch = m.ProducerID, m.ProducerEpoch
		if !m.Start.IsZero() {
			rs.StartTimestamp = m.Start.UnixMilli()
		}
		for _, tp := range m.Partitions {
			if !s.authorizedTopic(r, kmsg.ACLOperationDescribe, tp.Topic) {
				continue
			}
			if n := len(rs.Topics); n > 0 && rs.Topics[n-1].Topic == tp.Topic {
				rs.Topics[n-1].Partitions = append(rs.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			rs.Topics = append(rs.Topics, t)
		}
	}
	return resp, nil
}
