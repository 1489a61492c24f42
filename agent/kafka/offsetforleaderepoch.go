package kafka

// OffsetForLeaderEpoch (key 23), versions 2-4.
//
// For each partition the answer is the largest epoch at or below the
// requested one and the offset where it ended (the log end offset for the
// current epoch), from the partition's leader-epoch cache; an epoch older
// than the cache, for example after retention, is epoch -1, offset -1 with
// no error, as in Kafka. CurrentLeaderEpoch >= 0 is checked against the
// partition's: older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH.
// Only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere).
//
// ReplicaID (v3+) is not used: a consumer (-1), a follower (>= 0) and
// Kafka's debugging id (-2) all get the same answer from the leader; a new
// leader places epochs it has not written yet as Kafka's epoch cache would
// (agent/replica's OffsetForLeaderEpoch).
// Kafka additionally lets -2 be answered by a follower and checks
// CLUSTER_ACTION for followers; Strata has no ACLs and its followers ask the
// leader. Versions 0-1 are not served (Kafka 4 removed them).
//
// Authorization (authorize.go): CLUSTER_ACTION on the CLUSTER (followers)
// allows every topic; otherwise DESCRIBE on each topic, else
// TOPIC_AUTHORIZATION_FAILED on its partitions, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleOffsetForLeaderEpoch(ctx context.Context, s *Server, r *request, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	agent := s.authorizedCluster(r, kmsg.ACLOperationClusterAction)
	for _, rt := range req.Topics {
		ot := kmsg.NewOffsetForLeaderEpochResponseTopic()
		ot.Topic = rt.Topic
		t, ok := s.topics.Topic(rt.Topic)
		denied := !agent && !s.authorizedTopic(r, kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			op := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			op.Partition = rp.Partition
			op.LeaderEpoch, op.EndOffset = -1, -1
			if denied {
				op.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if !ok {
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if p, local := localPartition(t, rp.Partition); !local {
				op.ErrorCode = partitionError(t, rp.Partition)
			} else {
				s.offsetForLeaderEpoch(p, rp, &op)
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

func (s *Server) offsetForLeaderEpoch(p Replication, rp kmsg.OffsetForLeaderEpochRequestTopicPartition, op *kmsg.OffsetForLeaderEpochResponseTopicPartition) {
	if p.Leader() != s.cluster.AgentID() {
		op.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	epoch, end, err := p.OffsetForLeaderEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
	if err != nil {
		op.ErrorCode = errorCode(err)
		return
	}
	op.LeaderEpoch, op.EndOffset = epoch, end
}
