package kafka

// ListOffsets (key 2), versions 1-10.
//
// Special timestamps: -1 latest (the high watermark; the log end for a
// follower, which sets a replica id, as in Kafka), -2 earliest, -3 the
// record with the largest timestamp (v7+), -4 earliest local offset (v8+,
// KIP-1005: the first offset on the leader's disk), -5 latest tiered offset
// (v9+, -1 while nothing is tiered). A timestamp older than the local log
// is looked up in the bucket's manifest and segment. At read_committed the
// last stable offset takes the high watermark's place, for -1 and as the
// bound of timestamp lookups, as in Kafka.
//
// Authorization (authorize.go): DESCRIBE on each topic, else
// TOPIC_AUTHORIZATION_FAILED on its partitions. Unlike Kafka, a follower's
// request (replica id >= 0; agents ask their leaders) is also allowed by
// CLUSTER_ACTION on the CLUSTER, the one grant inter-agent traffic needs.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
)

func handleListOffsets(ctx context.Context, s *Server, r *request, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	agent := req.ReplicaID >= 0 && s.authorizedCluster(r, kmsg.ACLOperationClusterAction)
	for _, rt := range req.Topics {
		lt := kmsg.NewListOffsetsResponseTopic()
		lt.Topic = rt.Topic
		t, ok := s.topics.Topic(rt.Topic)
		denied := !agent && !s.authorizedTopic(r, kmsg.ACLOperationDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			lp := kmsg.NewListOffsetsResponseTopicPartition()
			lp.Partition = rp.Partition
			lp.Timestamp, lp.Offset, lp.LeaderEpoch = -1, -1, -1
			if denied {
				lp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if !ok || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
				lp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				s.listOffset(ctx, t.Partitions[rp.Partition], req.ReplicaID, req.IsolationLevel == isolationReadCommitted, rp, &lp)
			}
			lt.Partitions = append(lt.Partitions, lp)
		}
		resp.Topics = append(resp.Topics, lt)
	}
	return resp, nil
}

func (s *Server) listOffset(ctx context.Context, p interface {
	PartitionReader
	Replication
}, replicaID int32, committed bool, rp kmsg.ListOffsetsRequestTopicPartition, lp *kmsg.ListOffsetsResponseTopicPartition) {
	if p.Leader() != s.cluster.AgentID() {
		lp.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	if r, ok := p.(OffsetsRefresher); ok {
		if err := r.RefreshOffsets(ctx); err != nil {
			lp.ErrorCode = errorCode(err)
			return
		}
	}
	if e := rp.CurrentLeaderEpoch; e >= 0 {
		if le := p.LeaderEpoch(); e < le {
			lp.ErrorCode = kerr.FencedLeaderEpoch.Code
			return
		} else if e > le {
			lp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			return
		}
	}
	// hw is the end of what the client may read.
	hw := p.HighWatermark()
	if committed {
		hw = p.LastStableOffset()
	}
	switch rp.Timestamp {
	case -1:
		lp.Offset, lp.LeaderEpoch = hw, p.LeaderEpoch()
		if replicaID >= 0 {
			lp.Offset = p.LogEndOffset() // a follower lining its log up with the leader's
		}
		return
	case -2, -4:
		lp.Offset = p.LogStartOffset()
		if rp.Timestamp == -4 {
			lp.Offset = p.LocalLogStartOffset()
		}
		lp.LeaderEpoch, _, _ = p.OffsetForLeaderEpoch(-1, -1)
		if lp.LeaderEpoch < 0 {
			lp.LeaderEpoch = p.LeaderEpoch()
		}
		return
	case -5:
		lp.Offset = p.HighestTieredOffset()
		return
	case -3:
		raw, err := p.MaxTimestampBatch()
		if err != nil {
			lp.ErrorCode = errorCode(err)
			return
		}
		if raw == nil {
			return
		}
		off, ts, err := batch.MaxTimestampOffset(raw, maxDecompressed)
		if err != nil || off >= hw {
			return
		}
		lp.Offset, lp.Timestamp, lp.LeaderEpoch = off, ts, batchEpoch(raw)
		return
	}
	if rp.Timestamp < 0 {
		lp.ErrorCode = kerr.InvalidRequest.Code
		return
	}
	// A lookup may read the store; it gets the fetch's remote wait bound
	// at least, and a store failure is a retriable storage error.
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.RemoteFetchMaxWait, 30*time.Second))
	defer cancel()
	raw, err := p.FindByTimestamp(ctx, rp.Timestamp)
	if err != nil {
		if lp.ErrorCode = errorCode(err); lp.ErrorCode == kerr.UnknownServerError.Code {
			lp.ErrorCode = kerr.KafkaStorageError.Code
		}
		return
	}
	if raw == nil {
		return
	}
	off, ts, found, err := batch.OffsetAtTimestamp(raw, rp.Timestamp, maxDecompressed)
	if err != nil || !found || off >= hw {
		return
	}
	lp.Offset, lp.Timestamp, lp.LeaderEpoch = off, ts, batchEpoch(raw)
}

func batchEpoch(raw []byte) int32 {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return -1
	}
	return h.PartitionLeaderEpoch
}
