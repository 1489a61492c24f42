package kafka

// OffsetDelete (key 47), version 0.
//
// Deletes a group's committed offsets of the named partitions. A group with
// no state is GROUP_ID_NOT_FOUND; a partition of a topic that does not exist
// is UNKNOWN_TOPIC_OR_PARTITION. A topic that a member of the group
// subscribes to is GROUP_SUBSCRIBED_TO_TOPIC for the whole request (Kafka
// answers it per partition).
//
// Authorization (authorize.go): DELETE on the GROUP (GROUP_AUTHORIZATION_FAILED)
// and READ on each topic (TOPIC_AUTHORIZATION_FAILED on its partitions).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

func handleOffsetDelete(ctx context.Context, s *Server, r *request, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	c, err := s.groupCoordinator(ctx, r, kmsg.ACLOperationDelete, req.Group)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	var tps []group.TopicPartition
	for _, rt := range req.Topics {
		t, _ := s.topics.Topic(rt.Topic)
		denied := !s.authorizedTopic(r, kmsg.ACLOperationRead, rt.Topic)
		dt := kmsg.NewOffsetDeleteResponseTopic()
		dt.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			dp := kmsg.NewOffsetDeleteResponseTopicPartition()
			dp.Partition = rp.Partition
			if denied {
				dp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if !hasPartition(t, rp.Partition) {
				dp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				tps = append(tps, group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
		resp.Topics = append(resp.Topics, dt)
	}
	if err := c.DeleteOffsets(ctx, req.Group, tps); err != nil {
		// The group-level error stands for every partition.
		resp.ErrorCode = errorCode(err)
	}
	return resp, nil
}
