package kafka

// ConsumerGroupDescribe (key 69), versions 0-1 (KIP-848).
//
// Describes KIP-848 groups: state, group and assignment epochs, the
// assignor, and each member's epoch, subscription, current and target
// assignment (topics by id and name). A classic group or an unknown one
// gets GROUP_ID_NOT_FOUND, as in Kafka. AuthorizedOperations reports every
// group operation: there are no ACLs. MemberType (v1) is always 1: every
// member speaks the consumer protocol.
//
// Authorization (authorize.go): DESCRIBE on each GROUP, else
// GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/strata-streaming/strata/agent/group"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleConsumerGroupDescribe(ctx context.Context, s *Server, r *request, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, name := range req.Groups {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = name
		if req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = allGroupOperations
		}
		if !s.authorizedGroup(r, kmsg.ACLOperationDescribe, name) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		c, err := s.groups.GroupCoordinator(ctx, name)
		var d group.ConsumerDescription
		if err == nil {
			d, err = c.DescribeConsumer(name)
		}
		if err != nil {
			g.ErrorCode, g.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Groups = append(resp.Groups, g)
			continue
		}
		g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.Assignor
		for _, m := range d.Members {
			gm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			gm.MemberID, gm.MemberEpoch, gm.ClientID, gm.ClientHost = m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost
			gm.SubscribedTopics = nonNilStrings(m.SubscribedTopics)
			if m.InstanceID != "" {
				gm.InstanceID = strptr(m.InstanceID)
			}
			if m.RackID != "" {
				gm.RackID = strptr(m.RackID)
			}
			if m.SubscribedRegex != "" {
				gm.SubscribedTopicRegex = strptr(m.SubscribedRegex)
			}
			gm.Assignment = s.describedAssignment(m.Assignment)
			gm.TargetAssignment = s.describedAssignment(m.TargetAssignment)
			gm.MemberType = 1
			g.Members = append(g.Members, gm)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// describedAssignment names each topic of a; a topic deleted since it was
// assigned keeps its id and an empty name.
func (s *Server) describedAssignment(a group.Assignment) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, id := range sortedIDs(a) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Partitions = id, a[id]
		if t, ok := s.topics.TopicByID(id); ok {
			tp.Topic = t.Name
		}
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
