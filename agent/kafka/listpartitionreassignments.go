package kafka

// ListPartitionReassignments (key 46), version 0.
//
// Lists the partitions being moved, with Kafka's Replicas (old and new
// together), AddingReplicas (new replicas not yet in sync) and
// RemovingReplicas (those the move drops). Topics or partitions that are
// unknown or not moving are left out, as in Kafka.
//
// Authorization (authorize.go): DESCRIBE on the CLUSTER, else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleListPartitionReassignments(ctx context.Context, s *Server, r *request, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	var only map[string][]int32
	if req.Topics != nil {
		only = map[string][]int32{}
		for _, rt := range req.Topics {
			only[rt.Topic] = append(only[rt.Topic], rt.Partitions...)
		}
	}
	byTopic := map[string]int{}
	for _, m := range s.reassignments.PartitionReassignments(only) {
		i, ok := byTopic[m.Topic]
		if !ok {
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = m.Topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
			byTopic[m.Topic] = i
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas = m.Partition, m.Replicas, m.Adding, m.Removing
		if p.AddingReplicas == nil {
			p.AddingReplicas = []int32{}
		}
		if p.RemovingReplicas == nil {
			p.RemovingReplicas = []int32{}
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp, nil
}
