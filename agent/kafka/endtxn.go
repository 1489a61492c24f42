package kafka

// EndTxn (key 26), versions 0-4: commits or aborts the producer's
// transaction. The answer comes once PrepareCommit or PrepareAbort is
// durable in __transaction_state, as in Kafka; the markers are written
// after it, and the next InitProducerId or AddPartitionsToTxn of the id
// gets CONCURRENT_TRANSACTIONS until they are. A retried EndTxn of a
// transaction that already ended the same way succeeds. PRODUCER_FENCED
// from v2 on, INVALID_PRODUCER_EPOCH before. Version 5 (KIP-890's epoch
// bump per transaction) is not served.
//
// Authorization (authorize.go): WRITE on the TRANSACTIONAL_ID
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleEndTxn(ctx context.Context, s *Server, r *request, req *kmsg.EndTxnRequest) (*kmsg.EndTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !s.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	c, err := s.txns.TxnCoordinator(ctx, req.TransactionalID)
	if err == nil {
		err = c.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	}
	resp.ErrorCode = txnErrorCode(err, r.version, 2)
	return resp, nil
}
