package kafka

// InitProducerId (key 22), versions 0-5.
//
// Only idempotent producers are served. A request with a transactional id
// gets TRANSACTIONAL_ID_NOT_FOUND, so a transactional client fails fast with
// a clear error instead of retrying a coordinator that does not exist. A request that names
// an existing producer id and epoch (KIP-360, to bump the epoch after an
// error) gets a fresh producer id, which is what Kafka does for
// non-transactional producers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleInitProducerID(ctx context.Context, s *Server, r *request, req *kmsg.InitProducerIDRequest) (*kmsg.InitProducerIDResponse, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
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
