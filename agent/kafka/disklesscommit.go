package kafka

// DisklessCommit (Strata-private key 32000), version 0: an agent that
// uploaded a diskless commit object asks this agent, which leads the
// partitions of __diskless_state that coordinate them, to commit the
// object's batches (docs/design.md §7a, Write path). Each coordinator's
// share is committed in one append, concurrently with the others'; the
// answer has one result per batch, in the request's order: its base
// offset, or the coordinator's refusal (OUT_OF_ORDER_SEQUENCE_NUMBER,
// INVALID_PRODUCER_EPOCH, ...), or NOT_COORDINATOR when its coordinator
// is led elsewhere, so that the writer asks the new leader. A
// transaction marker comes inline, in a request with a zero object id
// (the agent that received the marker from the transaction coordinator
// sends it). A batch of a
// topic that is not a diskless topic here, or of a partition it does not
// have, is UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization: CLUSTER_ACTION on the CLUSTER, as WriteTxnMarkers; a
// principal without it gets CLUSTER_AUTHORIZATION_FAILED for the whole
// request. Never advertised in ApiVersions.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/log/batch"
)

func handleDisklessCommit(ctx context.Context, s *Server, r *request, req *disklesswire.CommitRequest) (*disklesswire.CommitResponse, error) {
	resp := req.ResponseKind().(*disklesswire.CommitResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	resp.Results = make([]disklesswire.CommitResult, len(req.Batches))
	// Each coordinator's batches, in request order, and where they go.
	type share struct {
		batches []batchcoord.CommitBatch
		at      []int
	}
	shares := map[*batchcoord.Coordinator]*share{}
	for i, b := range req.Batches {
		res := &resp.Results[i]
		res.BaseOffset, res.LogStart = -1, -1
		c, _, err := s.disklessCoordinator(ctx, b.TopicID, b.Partition)
		if err != nil {
			res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
			continue
		}
		sh := shares[c]
		if sh == nil {
			sh = &share{}
			shares[c] = sh
		}
		sh.at = append(sh.at, i)
		sh.batches = append(sh.batches, batchcoord.CommitBatch{
			Key:      batchcoord.PartitionKey{TopicID: b.TopicID, Partition: b.Partition},
			Position: b.Position, Size: b.Size,
			Header: batch.Header{LastOffsetDelta: b.LastOffsetDelta, MaxTimestamp: b.MaxTimestamp,
				ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch, BaseSequence: b.BaseSequence,
				Attributes: b.Attributes, RecordCount: b.LastOffsetDelta + 1, Magic: 2},
			Inline: b.Inline,
		})
	}
	var wg sync.WaitGroup // each goroutine sets only its share's results
	for c, sh := range shares {
		wg.Go(func() {
			results, err := c.Commit(ctx, req.ObjectID, req.CutMs, sh.batches)
			for j, i := range sh.at {
				res := &resp.Results[i]
				if err != nil {
					res.ErrorCode, res.ErrorMessage = errorCode(err), errorMessage(err)
					continue
				}
				got := results[j]
				if got.Err != nil {
					res.ErrorCode, res.ErrorMessage = errorCode(got.Err), errorMessage(got.Err)
					continue
				}
				res.BaseOffset, res.LogStart, res.Duplicate = got.BaseOffset, got.LogStart, got.Duplicate
			}
		})
	}
	wg.Wait()
	return resp, nil
}

// disklessCoordinator returns the coordinator, loaded here, of a
// partition of a diskless topic known here, and the partition's key.
func (s *Server) disklessCoordinator(ctx context.Context, topicID [16]byte, partition int32) (*batchcoord.Coordinator, batchcoord.PartitionKey, error) {
	k := batchcoord.PartitionKey{TopicID: topicID, Partition: partition}
	if err := s.checkDisklessPartition(topicID, partition); err != nil {
		return nil, k, err
	}
	c, err := s.diskless.DisklessCoordinator(ctx, topicID, partition)
	return c, k, err
}

// checkDisklessPartition refuses a partition that no diskless topic
// known here has.
func (s *Server) checkDisklessPartition(topicID [16]byte, partition int32) error {
	t, ok := s.topics.TopicByID(topicID)
	if !ok || !t.Resolved.Diskless || partition < 0 || partition >= t.PartitionCount {
		return kerr.UnknownTopicOrPartition
	}
	return nil
}
