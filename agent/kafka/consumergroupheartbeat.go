package kafka

// ConsumerGroupHeartbeat (key 68), versions 0-1 (KIP-848).
//
// The coordinator assigns partitions with its server-side assignors
// ("uniform", the default, and "range") and reconciles each member towards
// its target as Kafka does: partitions are revoked before they are given
// to another member, epochs fence members that fall behind. From v1 the
// member makes its own id. A group keeps the protocol it was created with:
// a heartbeat to a classic group with members gets GROUP_ID_NOT_FOUND, and
// a JoinGroup to a KIP-848 group with members INCONSISTENT_GROUP_PROTOCOL.
// Membership lives in the coordinator's memory only: after a restart
// members get UNKNOWN_MEMBER_ID and rejoin, keeping their committed offsets.
//
// Authorization (authorize.go): READ on the GROUP (GROUP_AUTHORIZATION_FAILED)
// and DESCRIBE on every subscribed topic name (TOPIC_AUTHORIZATION_FAILED),
// as Kafka 4 does.

import (
	"context"
	"time"

	"github.com/strata-streaming/strata/agent/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleConsumerGroupHeartbeat(ctx context.Context, s *Server, r *request, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if !s.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	for _, topic := range req.SubscribedTopicNames {
		if !s.authorizedTopic(r, kmsg.ACLOperationDescribe, topic) {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = strptr("not authorized to describe subscribed topic " + topic)
			return resp, nil
		}
	}
	hb := group.ConsumerHeartbeat{
		Group: req.Group, MemberID: req.MemberID, MemberEpoch: req.MemberEpoch,
		InstanceID: req.InstanceID, RackID: req.RackID, RebalanceTimeout: -1,
		SubscribedTopics: req.SubscribedTopicNames, SubscribedRegex: req.SubscribedTopicRegex,
		ServerAssignor: req.ServerAssignor, ClientID: derefString(r.clientID), ClientHost: clientHost(r.remote),
		RequireClientMemberIDs: r.version >= 1,
	}
	if req.RebalanceTimeoutMillis >= 0 {
		hb.RebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.Topics != nil {
		hb.Owned = group.Assignment{}
		for _, t := range req.Topics {
			hb.Owned[t.TopicID] = append(hb.Owned[t.TopicID], t.Partitions...)
		}
	}
	c, err := s.groups.GroupCoordinator(ctx, req.Group)
	var res group.ConsumerHeartbeatResult
	if err == nil {
		res, err = c.ConsumerHeartbeat(hb)
	}
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	resp.MemberID = strptr(res.MemberID)
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
	if res.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		for _, id := range sortedIDs(res.Assignment) {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, res.Assignment[id]
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return resp, nil
}
