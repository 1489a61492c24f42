package kafka

// InitProducerId (key 22), versions 0-5.
//
// Without a transactional id: a fresh producer id for an idempotent
// producer. A request that names an existing producer id and epoch
// (KIP-360, to bump the epoch after an error) gets a fresh producer id
// too, which is what Kafka does for non-transactional producers.
//
// With a transactional id: the transaction coordinator's answer
// (agent/txn): the id's producer id with its epoch bumped, which fences
// every older instance; an open transaction of the old instance is
// aborted first (CONCURRENT_TRANSACTIONS until that completes; the client
// retries); transaction.timeout.ms above --transaction-max-timeout is
// INVALID_TRANSACTION_TIMEOUT. A KIP-360 request (v3+) whose producer id
// and epoch are no longer current is PRODUCER_FENCED (v4+) or
// INVALID_PRODUCER_EPOCH before v4, as in Kafka. Under transaction
// version 2 (KIP-890 part 2) it behaves the same; the epoch then also
// moves at every EndTxn v5 (endtxn.go). Version 6 (KIP-939's
// keepPreparedTxn, for two-phase commit with an external coordinator) is
// not served.
//
// Authorization (authorize.go): a transactional id needs WRITE on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
// IDEMPOTENT_WRITE on the CLUSTER or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleInitProducerID(ctx context.Context, s *Server, r *request, req *kmsg.InitProducerIDRequest) (*kmsg.InitProducerIDResponse, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && !s.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case req.TransactionalID == nil && !s.authorizedCluster(r, kmsg.ACLOperationIdempotentWrite) &&
		!s.authorizedAnyTopic(r, kmsg.ACLOperationWrite):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.TransactionalID != nil {
		c, err := s.txns.TxnCoordinator(ctx, *req.TransactionalID)
		if err == nil {
			timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
			resp.ProducerID, resp.ProducerEpoch, err = c.InitProducerID(ctx, *req.TransactionalID, timeout, req.ProducerID, req.ProducerEpoch)
		}
		if err != nil {
			resp.ProducerID, resp.ProducerEpoch = -1, -1
			resp.ErrorCode = txnErrorCode(err, r.version, 4)
		}
		return resp, nil
	}
	id, err := s.producerIDs.NewProducerID(ctx)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
