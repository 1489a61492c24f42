package kafka

// DeleteRecords (key 21), versions 0-2.
//
// Offset -1 means the high watermark (delete everything visible). An offset
// above the high watermark, or negative other than -1, is
// OFFSET_OUT_OF_RANGE. The answer's LowWatermark is the partition's log
// start offset after the delete. Unlike Kafka, which holds the answer until
// every follower's log start has caught up (or TimeoutMillis passes), Strata
// answers once the leader has moved its log start: followers learn it on
// their next fetch, and no reader can see the deleted records from the
// leader in the meantime. A partition this agent does not lead is
// NOT_LEADER_OR_FOLLOWER; LowWatermark is -1 on every error.
//
// Authorization (authorize.go): DELETE on each topic, else
// TOPIC_AUTHORIZATION_FAILED on its partitions.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDeleteRecords(ctx context.Context, s *Server, r *request, req *kmsg.DeleteRecordsRequest) (*kmsg.DeleteRecordsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		dt := kmsg.NewDeleteRecordsResponseTopic()
		dt.Topic = rt.Topic
		t, ok := s.topics.Topic(rt.Topic)
		denied := !s.authorizedTopic(r, kmsg.ACLOperationDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			dp := kmsg.NewDeleteRecordsResponseTopicPartition()
			dp.Partition = rp.Partition
			dp.LowWatermark = -1
			if denied {
				dp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if !ok {
				dp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if p, local := localPartition(t, rp.Partition); !local {
				dp.ErrorCode = partitionError(t, rp.Partition)
			} else {
				dp.LowWatermark, dp.ErrorCode = s.deleteRecords(ctx, p, rp.Offset)
			}
			dt.Partitions = append(dt.Partitions, dp)
		}
		resp.Topics = append(resp.Topics, dt)
	}
	return resp, nil
}

// deleteRecords returns the new low watermark and the error code.
func (s *Server) deleteRecords(ctx context.Context, p interface {
	PartitionReader
	PartitionWriter
}, offset int64) (int64, int16) {
	if p.Leader() != s.cluster.AgentID() {
		return -1, kerr.NotLeaderForPartition.Code
	}
	hw := p.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange.Code
	}
	if err := p.DeleteRecordsBefore(ctx, offset); err != nil {
		return -1, errorCode(err)
	}
	return p.LogStartOffset(), 0
}
