package kafka

// InitProducerId (key 22), versions 0-5.
//
// Only idempotent producers are served. A request with a transactional id
// gets TRANSACTIONAL_ID_NOT_FOUND, so a transactional client fails fast with
// a clear error instead of retrying a coordinator that does not exist. A request that names
// an existing producer id and epoch (KIP-360, to bump the epoch after an
// error) gets a fresh producer id, which is what Kafka does for
// non-transactional producers.
//
// Authorization (authorize.go): a transactional id needs WRITE on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
// IDEMPOTENT_WRITE on the CLUSTER or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

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
		resp.ErrorCode = kerr.TransactionalIDNotFound.Code
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
