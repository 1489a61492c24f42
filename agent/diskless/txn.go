package diskless

// Transactions on diskless partitions (docs/design.md §7a, Transactions
// and idempotence). A transactional batch is guarded and verified before
// it is buffered: the partition's batch coordinator stands a guard for
// the producer (DisklessGuard), then the transaction coordinator confirms
// the partition is in the transaction (or, for transaction version 2,
// adds it). A marker of the producer committed in between removes the
// guard, and the batch's commit is then refused, so a batch verified
// before its transaction ended can never open it again (KIP-890). Every
// transactional batch is verified, not only a transaction's first in the
// partition: the agent that receives it does not know the producer's
// state, which is the coordinator's. Markers are committed inline, as a
// one-batch commit without an object.

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/peer"
)

// guard stands k's guard for the producer at its coordinator.
func (s *Service) guard(ctx context.Context, k batchcoord.PartitionKey, producerID int64, epoch int16) error {
	co, err := s.host.Coordinator(ctx, k.TopicID, k.Partition)
	if err != nil {
		return err
	}
	req := &disklesswire.GuardRequest{TopicID: k.TopicID, Partition: k.Partition, ProducerID: producerID, ProducerEpoch: epoch}
	return s.peers.Do(ctx, co.Agent, co.Addr, func(c *peer.Client) error { return c.DisklessGuard(ctx, req) })
}

// verify guards and verifies a transactional batch of k (the file
// comment); verify is the Produce's (nil: the request named no
// transactional id, and only the guard is stood).
func (s *Service) verify(ctx context.Context, k batchcoord.PartitionKey, h *batch.Header, verify dataplane.VerifyTxn) error {
	if err := s.guard(ctx, k, h.ProducerID, h.ProducerEpoch); err != nil {
		return fmt.Errorf("%w: %w", ErrGuard, err)
	}
	if verify == nil {
		return nil
	}
	return verify(ctx, h.ProducerID, h.ProducerEpoch)
}

// WriteMarker commits a transaction marker to diskless partition
// (topicID, partition) through its batch coordinator, inline: the
// transaction coordinator's WriteTxnMarkers for a diskless partition
// ends here, on whichever agent it reached.
func (s *Service) WriteMarker(ctx context.Context, topicID [16]byte, partition int32, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) error {
	typ := batch.ControlAbort
	if commit {
		typ = batch.ControlCommit
	}
	raw, err := batch.BuildMarker(producerID, epoch, batch.Marker{Type: typ, CoordinatorEpoch: coordinatorEpoch}, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return err
	}
	co, err := s.host.Coordinator(ctx, topicID, partition)
	if err != nil {
		return err
	}
	req := &disklesswire.CommitRequest{CutMs: time.Now().UnixMilli(), Writer: s.self, Batches: []disklesswire.CommitBatch{{
		TopicID: topicID, Partition: partition, Size: int32(len(raw)), LastOffsetDelta: h.LastOffsetDelta,
		MaxTimestamp: h.MaxTimestamp, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
		BaseSequence: h.BaseSequence, Attributes: h.Attributes, Inline: raw,
	}}}
	var resp *disklesswire.CommitResponse
	err = s.peers.Do(ctx, co.Agent, co.Addr, func(c *peer.Client) error {
		var err error
		resp, err = c.DisklessCommit(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	r := resp.Results[0]
	if err := peer.CodeError(r.ErrorCode, co.Addr); err != nil {
		return err
	}
	s.learn(batchcoord.PartitionKey{TopicID: topicID, Partition: partition}, co, batchcoord.View{HighWatermark: r.BaseOffset + 1, LogStart: r.LogStart, Epoch: co.Epoch})
	return nil
}

// aborted returns k's aborted transactions overlapping [from, upper).
func (s *Service) aborted(ctx context.Context, k batchcoord.PartitionKey, from, upper int64) ([]log.AbortedTxn, error) {
	a, _, err := s.ask(ctx, disklesswire.IndexPartition{TopicID: k.TopicID, Partition: k.Partition, Op: disklesswire.OpAborted, Value: from, Upper: upper})
	if err != nil {
		return nil, err
	}
	out := make([]log.AbortedTxn, len(a.Aborted))
	for i, x := range a.Aborted {
		out[i] = log.AbortedTxn{ProducerID: x.ProducerID, FirstOffset: x.FirstOffset, LastOffset: x.LastOffset}
	}
	return out, nil
}
