package kafka

// OffsetCommit (key 8), versions 2-9.
//
// The rules are Kafka's (group.Coordinator.CommitOffsets): a member's
// commit must name its current generation (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) and is accepted in Stable and in
// PreparingRebalance, when clients commit in their revoke callbacks;
// REBALANCE_IN_PROGRESS is answered only in CompletingRebalance. A commit
// with generation -1 is accepted while the group has no members. A KIP-848
// member commits with its member epoch (STALE_MEMBER_EPOCH otherwise).
// A partition of a topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION
// and metadata longer than offset.metadata.max.bytes (4096) is
// OFFSET_METADATA_TOO_LARGE; the other partitions of the request are
// committed together, all or none. A commit with a generation to a group
// that does not exist is ILLEGAL_GENERATION, and GROUP_ID_NOT_FOUND from
// v9 on, as in Kafka. RetentionTimeMillis (v2-4) is ignored, as in Kafka 4.
// Version 10 (topic ids) is not served.
//
// Authorization (authorize.go): READ on the GROUP (GROUP_AUTHORIZATION_FAILED on
// every partition) and READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions), as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/group"
)

// maxCommitMetadataBytes is Kafka's offset.metadata.max.bytes default.
const maxCommitMetadataBytes = 4096

func handleOffsetCommit(ctx context.Context, s *Server, r *request, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	commit := group.Commit{Group: req.Group, MemberID: req.MemberID, Generation: req.Generation, Offsets: map[group.TopicPartition]group.Offset{}}
	if req.InstanceID != nil {
		commit.InstanceID = *req.InstanceID
	}
	commit.GroupMustExist = r.version >= 9
	codes := make([][]int16, len(req.Topics))
	groupDenied := !s.authorizedGroup(r, kmsg.ACLOperationRead, req.Group)
	for i, rt := range req.Topics {
		t, _ := s.topics.Topic(rt.Topic)
		topicDenied := !groupDenied && !s.authorizedTopic(r, kmsg.ACLOperationRead, rt.Topic)
		codes[i] = make([]int16, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			switch {
			case groupDenied:
				codes[i][j] = kerr.GroupAuthorizationFailed.Code
			case topicDenied:
				codes[i][j] = kerr.TopicAuthorizationFailed.Code
			case !hasPartition(t, rp.Partition):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case rp.Metadata != nil && len(*rp.Metadata) > maxCommitMetadataBytes:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				o := group.Offset{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch}
				if r.version < 6 {
					o.LeaderEpoch = -1
				}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				commit.Offsets[group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = o
			}
		}
	}
	var shared int16
	if len(commit.Offsets) > 0 {
		c, err := s.groups.GroupCoordinator(ctx, req.Group)
		if err == nil {
			err = c.CommitOffsets(ctx, commit)
		}
		shared = errorCode(err)
	}
	for i, rt := range req.Topics {
		ct := kmsg.NewOffsetCommitResponseTopic()
		ct.Topic = rt.Topic
		for j, rp := range rt.Partitions {
			cp := kmsg.NewOffsetCommitResponseTopicPartition()
			cp.Partition, cp.ErrorCode = rp.Partition, codes[i][j]
			if cp.ErrorCode == 0 {
				cp.ErrorCode = shared
			}
			ct.Partitions = append(ct.Partitions, cp)
		}
		resp.Topics = append(resp.Topics, ct)
	}
	return resp, nil
}
