package kafka

// DisklessIndex (Strata-private key 32001), version 0: an agent serving
// a Fetch, ListOffsets or OffsetForLeaderEpoch of a diskless partition
// asks the agent that coordinates it where its batches are
// (docs/design.md §7a, Read path). Each partition names an operation:
// read the batches from an offset on (at most MaxBytes, at least one),
// find the first batch at or after a timestamp, answer
// OffsetForLeaderEpoch, or list the aborted transactions in a range
// (read_committed). With MaxWaitMs above zero and nothing to return
// for any read, the answer waits until a commit moves one of the
// partitions' high watermarks, or the wait ends: the reader's long poll.
// Errors are per partition (NOT_COORDINATOR when led elsewhere,
// UNKNOWN_TOPIC_OR_PARTITION for a partition no diskless topic has).
//
// Authorization: CLUSTER_ACTION on the CLUSTER; a principal without it
// gets CLUSTER_AUTHORIZATION_FAILED for every partition. Never
// advertised in ApiVersions.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/disklesswire"
)

// maxDisklessIndexWait bounds a long poll whatever the request asks.
const maxDisklessIndexWait = 30 * time.Second

func handleDisklessIndex(ctx context.Context, s *Server, r *request, req *disklesswire.IndexRequest) (*disklesswire.IndexResponse, error) {
	resp := req.ResponseKind().(*disklesswire.IndexResponse)
	resp.Partitions = make([]disklesswire.IndexAnswer, len(req.Partitions))
	if !s.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		for i := range resp.Partitions {
			resp.Partitions[i].ErrorCode = kerr.ClusterAuthorizationFailed.Code
		}
		return resp, nil
	}
	wait := min(time.Duration(max(req.MaxWaitMs, 0))*time.Millisecond, maxDisklessIndexWait)
	deadline := time.Now().Add(wait)
	for {
		moved, any := s.answerDisklessIndex(ctx, req, resp)
		if any || len(moved) == 0 || time.Now().After(deadline) {
			return resp, nil
		}
		began := time.Now()
		if !awaitAny(ctx, moved, time.Until(deadline)) {
			r.waited += time.Since(began)
			return resp, nil
		}
		r.waited += time.Since(began)
	}
}

// answerDisklessIndex fills resp from the coordinators and returns the
// channels that close when a read partition next moves, and whether any
// read returned batches or any partition failed (nothing to wait for).
func (s *Server) answerDisklessIndex(ctx context.Context, req *disklesswire.IndexRequest, resp *disklesswire.IndexResponse) ([]<-chan struct{}, bool) {
	var moved []<-chan struct{}
	answered := false
	for i, p := range req.Partitions {
		a := &resp.Partitions[i]
		*a = disklesswire.IndexAnswer{Epoch: -1, EndOffset: -1}
		c, _, err := s.disklessCoordinator(ctx, p.TopicID, p.Partition)
		if err == nil {
			var ch <-chan struct{}
			ch, err = answerIndexPartition(c, p, a)
			if ch != nil {
				moved = append(moved, ch)
			} else {
				answered = true
			}
		}
		if err != nil {
			a.ErrorCode = errorCode(err)
			answered = true
		}
	}
	return moved, answered
}

// answerIndexPartition answers one partition from its coordinator, and
// returns, for a read at the high watermark, the channel that closes at
// the next commit.
func answerIndexPartition(c *batchcoord.Coordinator, p disklesswire.IndexPartition, a *disklesswire.IndexAnswer) (<-chan struct{}, error) {
	k := batchcoord.PartitionKey{TopicID: p.TopicID, Partition: p.Partition}
	offset := int64(0)
	if p.Op == disklesswire.OpRead {
		offset = p.Value
	}
	v, moved, err := c.Read(k, offset, int64(max(p.MaxBytes, 1)))
	if err != nil {
		return nil, err
	}
	a.LogStart, a.CompactedEnd, a.HighWatermark, a.LastStable, a.CoordEpoch = v.LogStart, v.CompactedEnd, v.HighWatermark, v.LastStable, v.Epoch
	switch p.Op {
	case disklesswire.OpRead:
		a.Batches = located(v.Batches)
		if offset >= v.HighWatermark {
			return moved, nil // nothing yet: a long poll waits for a commit
		}
	case disklesswire.OpByTimestamp:
		b, ok, err := c.FindByTimestamp(k, p.Value)
		if err != nil {
			return nil, err
		}
		if ok {
			a.Batches = located([]batchcoord.Located{b})
		}
	case disklesswire.OpMaxTime:
		b, ok, err := c.MaxTimestamp(k)
		if err != nil {
			return nil, err
		}
		if ok {
			a.Batches = located([]batchcoord.Located{b})
		}
	case disklesswire.OpAborted:
		ab, err := c.AbortedIn(k, p.Value, p.Upper)
		if err != nil {
			return nil, err
		}
		for _, x := range ab {
			a.Aborted = append(a.Aborted, disklesswire.Aborted{ProducerID: x.ProducerID, FirstOffset: x.FirstOffset, LastOffset: x.LastOffset})
		}
	case disklesswire.OpEpochEnd:
		if p.Value < -1<<31 || p.Value >= 1<<31 {
			return nil, kerr.InvalidRequest
		}
		if a.Epoch, a.EndOffset, err = c.OffsetForEpoch(k, int32(p.Value)); err != nil {
			return nil, err
		}
	default:
		return nil, kerr.InvalidRequest
	}
	return nil, nil
}

func located(bs []batchcoord.Located) []disklesswire.Located {
	out := make([]disklesswire.Located, len(bs))
	for i, b := range bs {
		out[i] = disklesswire.Located{BaseOffset: b.BaseOffset, LastOffset: b.LastOffset, ObjectID: b.ObjectID,
			Position: b.Position, Size: b.Size, MaxTimestamp: b.MaxTimestamp, Epoch: b.Epoch, Inline: b.Inline}
	}
	return out
}

// awaitAny waits until one of chs closes (true), or ctx ends or d passes
// (false).
func awaitAny(ctx context.Context, chs []<-chan struct{}, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	woke := make(chan struct{}, 1)
	for _, ch := range chs {
		go func() {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				default:
				}
			case <-ctx.Done():
			}
		}()
	}
	select {
	case <-woke:
		return true
	case <-ctx.Done():
		return false
	}
}
