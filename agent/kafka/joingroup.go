package kafka

// JoinGroup (key 11), versions 2-9.
//
// The classic protocol as Kafka runs it: KIP-394 member ids (v4+ answers a
// new member with MEMBER_ID_REQUIRED and its id), static members
// (KIP-345, v5+), a join phase that ends when every member has rejoined or
// the longest rebalance timeout passes, and the first rebalance of an empty
// group held for group.initial.rebalance.delay.ms (3 s). Session timeouts
// outside [6 s, 30 min] are INVALID_SESSION_TIMEOUT. The Reason (v8+) is
// logged only through the rebalance it causes. SkipAssignment (v9) is
// always false: the leader assigns. Versions 0-1 are not served, as in
// Kafka 4.
//
// Authorization (authorize.go): READ on the GROUP, else GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

func handleJoinGroup(ctx context.Context, s *Server, r *request, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation = -1
	c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationRead, req.Group)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	jr := group.JoinRequest{
		Group: req.Group, MemberID: req.MemberID, ClientID: derefString(r.clientID), ClientHost: clientHost(r.remote),
		ProtocolType: req.ProtocolType, SessionTimeout: time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout: time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond, RequireKnownMemberID: r.version >= 4,
	}
	if req.InstanceID != nil {
		jr.InstanceID = *req.InstanceID
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	res, err := c.Join(ctx, jr)
	if errors.Is(err, context.Canceled) {
		return nil, err // the connection is gone
	}
	resp.ErrorCode = errorCode(err)
	resp.MemberID = res.MemberID
	if err != nil {
		return resp, nil
	}
	resp.Generation, resp.LeaderID = res.Generation, res.LeaderID
	resp.ProtocolType, resp.Protocol = strptr(res.ProtocolType), strptr(res.Protocol)
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.ProtocolMetadata = m.MemberID, m.Metadata
		if m.InstanceID != "" {
			rm.InstanceID = strptr(m.InstanceID)
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
