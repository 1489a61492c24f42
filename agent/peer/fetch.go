package peer

// A follower's Fetch of many partitions from one leader (Kafka's replica
// fetcher sends the same): every partition the agent follows there, or in
// a fetch session only those whose request changed (FetchSession builds
// that part). The leader answers as soon as any partition has records.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrFetchSessionLost is a Fetch the leader refused because it no longer
// holds the fetch session named (FETCH_SESSION_ID_NOT_FOUND: evicted, or
// the leader restarted) or expected another epoch
// (INVALID_FETCH_SESSION_EPOCH). The next request opens a session again.
var ErrFetchSessionLost = errors.New("peer: the leader lost the fetch session")

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// FetchPartition is one partition of a follower's Fetch.
type FetchPartition struct {
	TopicPartition
	LeaderEpoch int32 // the follower's current leader epoch
	Offset      int64
	MaxBytes    int32
}

// FetchRequest is a follower's Fetch from one leader.
type FetchRequest struct {
	ReplicaID int32
	MaxWait   time.Duration
	MaxBytes  int32 // of the whole response; the first batch comes whole
	// SessionID and SessionEpoch are KIP-227's (FetchSession.Next):
	// epoch 0 opens a session, -1 fetches without one.
	SessionID, SessionEpoch int32
	Partitions              []FetchPartition
	// Forgotten are partitions an incremental request drops from the
	// session.
	Forgotten []TopicPartition
}

// FetchResponse is the leader's answer: every partition asked without a
// session or opening one, and in an incremental fetch only those with
// records, a new HW or log start, or an error.
type FetchResponse struct {
	// SessionID is the session the answer belongs to; 0 when the leader
	// opened none (its cache is full, or sessions are off).
	SessionID  int32
	Partitions []FetchedPartition
}

// FetchedPartition is one partition of an answer.
type FetchedPartition struct {
	TopicPartition
	Records        []byte
	HighWatermark  int64 // -1 when the leader did not read the partition
	LogStartOffset int64 // the partition's log start (DeleteRecords moves it)
	// Err is the partition's error code as the agent's sentinels
	// (dataplane.ErrNotLeader, replica.ErrFencedLeaderEpoch,
	// log.ErrOffsetOutOfRange...), nil for none.
	Err error
}

// Fetch long-polls the leader for records of f's partitions. An error is
// the request's (the connection's, or a top-level error code:
// ErrFetchSessionLost for a session the leader refused); each partition's
// own error is in its FetchedPartition.
func (c *Client) Fetch(ctx context.Context, f FetchRequest) (FetchResponse, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = peerFetchVersion
	req.ReplicaID = f.ReplicaID
	req.MaxWaitMillis = int32(f.MaxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = f.MaxBytes
	req.SessionID, req.SessionEpoch = f.SessionID, f.SessionEpoch
	for _, p := range f.Partitions {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.Topic {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = p.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.PartitionMaxBytes = p.Partition, p.LeaderEpoch, p.Offset, p.MaxBytes
		rp.LogStartOffset = -1
		rt := &req.Topics[len(req.Topics)-1]
		rt.Partitions = append(rt.Partitions, rp)
	}
	for _, p := range f.Forgotten {
		if n := len(req.ForgottenTopics); n == 0 || req.ForgottenTopics[n-1].Topic != p.Topic {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic = p.Topic
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		ft := &req.ForgottenTopics[len(req.ForgottenTopics)-1]
		ft.Partitions = append(ft.Partitions, p.Partition)
	}
	resp := kmsg.NewPtrFetchResponse()
	if err := c.request(ctx, req, resp); err != nil {
		return FetchResponse{}, err
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
		return FetchResponse{}, fmt.Errorf("%w: peer %s: session %d epoch %d: %w", ErrFetchSessionLost, c.addr, f.SessionID, f.SessionEpoch, kerr.ErrorForCode(resp.ErrorCode))
	default:
		return FetchResponse{}, peerError(resp.ErrorCode, c.addr)
	}
	out := FetchResponse{SessionID: resp.SessionID}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			fp := FetchedPartition{TopicPartition: TopicPartition{rt.Topic, rp.Partition}, Records: rp.RecordBatches,
				HighWatermark: rp.HighWatermark, LogStartOffset: rp.LogStartOffset}
			if rp.ErrorCode != 0 {
				fp.Err = peerError(rp.ErrorCode, c.addr)
			}
			out.Partitions = append(out.Partitions, fp)
		}
	}
	return out, nil
}
