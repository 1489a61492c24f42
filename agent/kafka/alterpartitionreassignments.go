package kafka

// AlterPartitionReassignments (key 45), version 0.
//
// Each partition's target replicas are written into its state; the new
// replicas start copying the leader's local tail at once (older records are
// in the bucket), and the leader completes the move when all of them are in
// sync (docs/design.md §8). A null replica list cancels a move in progress
// (NO_REASSIGNMENT_IN_PROGRESS when there is none); cancelling drops the
// replicas the move added. Target agents must be live
// (INVALID_REPLICA_ASSIGNMENT names the others). Unlike Kafka, which keeps
// a reassignment to a dead broker pending until an operator cancels it,
// the balancer cancels a move whose new replica's agent has been gone
// from gossip for --rebalance-settle, whoever started it (agent/control
// moves.go). Version 1 (KIP-860's AllowReplicationFactorChange) is not
// served.
//
// Authorization (authorize.go): ALTER on the CLUSTER, else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleAlterPartitionReassignments(ctx context.Context, s *Server, r *request, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, rt := range req.Topics {
		at := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		at.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			ap := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			ap.Partition = rp.Partition
			if err := s.reassignments.AlterPartitionReassignment(ctx, rt.Topic, rp.Partition, rp.Replicas); err != nil {
				ap.ErrorCode, ap.ErrorMessage = errorCode(err), errorMessage(err)
			}
			at.Partitions = append(at.Partitions, ap)
		}
		resp.Topics = append(resp.Topics, at)
	}
	return resp, nil
}
