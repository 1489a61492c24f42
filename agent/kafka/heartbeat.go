package kafka

// Heartbeat (key 12), versions 0-4.
//
// Keeps a member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin,
// ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID that it is out of date, as in
// Kafka.
//
// Authorization (authorize.go): READ on the GROUP, else GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleHeartbeat(ctx context.Context, s *Server, r *request, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationRead, req.Group)
	if err == nil {
		err = c.Heartbeat(req.Group, req.MemberID, derefString(req.InstanceID), req.Generation)
	}
	resp.ErrorCode = errorCode(err)
	return resp, nil
}
