package kafka

// SyncGroup (key 14), versions 0-5.
//
// Followers wait for the leader's assignment; a member of a group that is
// rebalancing gets REBALANCE_IN_PROGRESS. ProtocolType and Protocol (v5+)
// must match the group's when sent (INCONSISTENT_GROUP_PROTOCOL otherwise).
// Assignments are kept in memory only: after a coordinator restart members
// rejoin and the leader assigns again, which every client does on
// UNKNOWN_MEMBER_ID.
//
// Authorization (authorize.go): READ on the GROUP, else GROUP_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

func handleSyncGroup(ctx context.Context, s *Server, r *request, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationRead, req.Group)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	sr := group.SyncRequest{Group: req.Group, MemberID: req.MemberID, InstanceID: derefString(req.InstanceID),
		Generation: req.Generation, ProtocolType: derefString(req.ProtocolType), Protocol: derefString(req.Protocol)}
	if len(req.GroupAssignment) > 0 {
		sr.Assignments = map[string][]byte{}
		for _, a := range req.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	res, err := c.Sync(ctx, sr)
	if errors.Is(err, context.Canceled) {
		return nil, err
	}
	resp.ErrorCode = errorCode(err)
	if err == nil {
		resp.ProtocolType, resp.Protocol = strptr(res.ProtocolType), strptr(res.Protocol)
		resp.MemberAssignment = res.Assignment
		if resp.MemberAssignment == nil {
			resp.MemberAssignment = []byte{}
		}
	}
	return resp, nil
}
