package kafka

// EndTxn (key 26), versions 0-5: commits or aborts the producer's
// transaction. The answer comes once PrepareCommit or PrepareAbort is
// durable in __transaction_state, as in Kafka; the markers are written
// after it, and the next InitProducerId or AddPartitionsToTxn of the id
// waits for them or gets CONCURRENT_TRANSACTIONS. PRODUCER_FENCED from
// v2 on, INVALID_PRODUCER_EPOCH before.
//
// Versions 0-4 (transaction version 1) keep the producer epoch; a
// retried EndTxn of a transaction that already ended the same way
// succeeds. Version 5 is transaction version 2 (KIP-890 part 2, see
// agent/txn's EndTxn): every end bumps the producer epoch (a new producer
// id at epoch 0 once the epoch is exhausted), the markers carry the new
// epoch, and the answer carries the producer id and epoch to use next
// (-1 on error, as in Kafka); a retry naming the epoch before the bump
// succeeds once that end is complete; an abort with no transaction open
// succeeds and bumps the epoch.
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
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !s.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	c, err := s.txns.TxnCoordinator(ctx, req.TransactionalID)
	if err == nil {
		var id int64
		var epoch int16
		id, epoch, err = c.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, r.version >= 5)
		if err == nil {
			resp.ProducerID, resp.ProducerEpoch = id, epoch
		}
	}
	resp.ErrorCode = txnErrorCode(err, r.version, 2)
	return resp, nil
}
