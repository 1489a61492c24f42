package kafka

// LeaveGroup (key 13), versions 0-5.
//
// v0-2 name one member; v3+ a batch, each answered on its own (a static
// member may be named by instance id alone, as kafka-consumer-groups.sh
// does). A group with no state is UNKNOWN_MEMBER_ID for the whole request.
//
// Authorization (authorize.go): READ on the GROUP, else GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

func handleLeaveGroup(ctx context.Context, s *Server, r *request, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	var leavers []group.Leaver
	if r.version < 3 {
		leavers = []group.Leaver{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			leavers = append(leavers, group.Leaver{MemberID: m.MemberID, InstanceID: derefString(m.InstanceID)})
		}
	}
	c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationRead, req.Group)
	var errs []error
	if err == nil {
		errs, err = c.Leave(req.Group, leavers)
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	if r.version < 3 {
		resp.ErrorCode = errorCode(errs[0])
		return resp, nil
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, errorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
