package kafka

// FindCoordinator (key 10), versions 0-5.
//
// Group keys (type 0) are answered with the leader of the partition of
// __consumer_offsets that the group hashes to, as in Kafka; the topic is
// created on the first lookup. Transaction keys (type 1) are answered
// with the leader of the partition of __transaction_state the
// transactional id hashes to, created likewise. Version 6 (share-group keys, KIP-932) is not served.
//
// Authorization (authorize.go): DESCRIBE on the GROUP (GROUP_AUTHORIZATION_FAILED)
// or, for a transaction coordinator, on the TRANSACTIONAL_ID
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleFindCoordinator(ctx context.Context, s *Server, r *request, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if r.version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		switch {
		case req.CoordinatorType == 0 && !s.authorizedGroup(r, kmsg.ACLOperationDescribe, key):
			c.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case req.CoordinatorType == 1 && !s.authorized(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key):
			c.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		}
		switch {
		case c.ErrorCode != 0:
		case req.CoordinatorType == 0 || req.CoordinatorType == 1:
			find := s.groups.FindGroupCoordinator
			if req.CoordinatorType == 1 {
				find = s.txns.FindTxnCoordinator
			}
			b, err := find(ctx, key)
			if err != nil {
				c.ErrorCode, c.ErrorMessage = errorCode(err), errorMessage(err)
				if c.ErrorCode == kerr.UnknownServerError.Code {
					c.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
			} else {
				c.Host, c.Port = b.Address(r.listenerName())
				c.NodeID = b.ID
			}
		default:
			c.ErrorCode = kerr.InvalidRequest.Code
			c.ErrorMessage = strptr("unknown coordinator type")
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if r.version < 4 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
		resp.Coordinators = nil
	}
	return resp, nil
}
