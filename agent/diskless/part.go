package diskless

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
)

// ErrTransactional: diskless partitions take no transactional batches
// yet; the Produce is refused before anything is buffered.
var ErrTransactional = errors.New("diskless: transactional produce to a diskless topic is not supported yet")

// ErrNoMaxTimestamp: ListOffsets for the max timestamp (-3) is not
// answered for diskless partitions.
var ErrNoMaxTimestamp = errors.New("diskless: the batch with the largest timestamp is not looked up for diskless partitions")

// ErrDeleteRecords: DeleteRecords is not applied to diskless partitions
// yet.
var ErrDeleteRecords = errors.New("diskless: DeleteRecords is not supported for diskless topics yet")

// viewMaxAge is how old a partition's offsets may be when answered
// without asking its coordinator: Fetch reads refresh them, and the
// index follower keeps the followed ones fresh.
const viewMaxAge = 2 * time.Second

// lookupTimeout bounds a coordinator question asked on behalf of a
// caller without a context (the offsets of ListOffsets and Metadata).
const lookupTimeout = 5 * time.Second

// Partition is one partition of a diskless topic as this agent serves
// it: every agent leads every diskless partition (docs/design.md §7a),
// writes go through the Service's buffer and reads ask the partition's
// coordinator. It implements dataplane.Partition; safe for concurrent
// use.
type Partition struct {
	s     *Service
	key   batchcoord.PartitionKey
	index int32
}

var _ dataplane.Partition = (*Partition)(nil)
var _ dataplane.DeferredWriter = (*Partition)(nil)

// Partition returns partition index of the diskless topic topicID.
func (s *Service) Partition(topicID [16]byte, index int32) *Partition {
	return &Partition{s: s, key: batchcoord.PartitionKey{TopicID: topicID, Partition: index}, index: index}
}

func (p *Partition) Index() int32      { return p.index }
func (p *Partition) Leader() int32     { return p.s.self }
func (p *Partition) Replicas() []int32 { return []int32{p.s.self} }
func (p *Partition) ISR() []int32      { return []int32{p.s.self} }
func (p *Partition) Local() bool       { return true }

// LeaderEpoch is the leader epoch of the coordinator's partition of
// __diskless_state, which every agent reads from the same state and
// which only grows: clients checking epochs (KIP-320) accept any
// agent's answer. A fresh view answers with the highest epoch this
// partition's coordinator answered with (View.Epoch), not with its
// Coord's: the index follower learns every partition it polls with the
// Coord of one of them, whose coordinator partition may be at another
// epoch, and a late answer must not move the epoch back.
func (p *Partition) LeaderEpoch() int32 {
	if v, ok := p.s.cached(p.key, viewMaxAge); ok {
		return v.Epoch
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	co, err := p.s.host.Coordinator(ctx, p.key.TopicID, p.key.Partition)
	if err != nil {
		return 0
	}
	return co.Epoch
}

// AppendDeferred implements dataplane.DeferredWriter: the batch joins the
// write buffer, and wait returns its offsets once its object is
// uploaded and committed.
func (p *Partition) AppendDeferred(ctx context.Context, raw []byte, _ int16, _ *string, _ bool, _ dataplane.VerifyTxn) (func(context.Context) (log.AppendResult, error), error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return nil, err
	}
	if h.IsTransactional() {
		return nil, ErrTransactional
	}
	wait, err := p.s.writer.Add(ctx, p.key.TopicID, p.key.Partition, raw)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (log.AppendResult, error) {
		r, err := wait(ctx)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			return log.AppendResult{}, err
		}
		res := log.AppendResult{BaseOffset: r.BaseOffset, LastOffset: r.BaseOffset + int64(h.LastOffsetDelta),
			LogAppendTime: -1, LogStartOffset: p.LogStartOffset(), Duplicate: r.Duplicate}
		if h.Attributes&batch.AttrLogAppendTime != 0 {
			res.LogAppendTime = h.MaxTimestamp
		}
		return res, nil
	}, nil
}

// Append and AppendTransactional are AppendDeferred for callers that
// need no offsets.
func (p *Partition) Append(raw []byte, acks int16) (log.AppendResult, dataplane.AppendWait, error) {
	return p.AppendTransactional(context.Background(), raw, acks, nil, false, nil)
}

func (p *Partition) AppendTransactional(ctx context.Context, raw []byte, acks int16, id *string, add bool, verify dataplane.VerifyTxn) (log.AppendResult, dataplane.AppendWait, error) {
	wait, err := p.AppendDeferred(ctx, raw, acks, id, add, verify)
	if err != nil {
		return log.AppendResult{}, nil, err
	}
	return log.AppendResult{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: -1},
		func(ctx context.Context) error { _, err := wait(ctx); return err }, nil
}

// Read returns the committed batches from offset on, up to the high
// watermark this agent knew when the read began, so that they never pass
// the high watermark the Fetch answer carries (taken just before).
func (p *Partition) Read(ctx context.Context, offset int64, maxBytes int, minOne bool) ([]byte, error) {
	before, _ := p.s.cached(p.key, viewMaxAge)
	a, err := p.s.index(ctx, p.key, disklesswire.OpRead, offset, int32(min(maxBytes, 1<<30)))
	if err != nil {
		return nil, err
	}
	p.s.touch(p.key)
	if offset < a.LogStart || offset > a.HighWatermark {
		return nil, fmt.Errorf("%w: offset %d outside [%d, %d]", log.ErrOffsetOutOfRange, offset, a.LogStart, a.HighWatermark)
	}
	return p.s.read(ctx, a.Batches, maxBytes, minOne, before.HighWatermark)
}

// ReadsFromStore: every read of a diskless partition goes to the bucket
// (or the cache in front of it).
func (p *Partition) ReadsFromStore(int64) bool { return true }

// offsets returns the partition's offsets, asking its coordinator when
// what this agent knows is older than viewMaxAge.
func (p *Partition) offsets() batchcoord.View {
	if v, ok := p.s.cached(p.key, viewMaxAge); ok {
		return v.View
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	if _, err := p.s.index(ctx, p.key, disklesswire.OpRead, 0, 1); err != nil {
		p.s.logger.Debug("diskless offsets: coordinator not reached", "error", err)
	}
	v, _ := p.s.cached(p.key, time.Hour)
	return v.View
}

func (p *Partition) HighWatermark() int64       { return p.offsets().HighWatermark }
func (p *Partition) LastStableOffset() int64    { return p.offsets().LastStable }
func (p *Partition) LogStartOffset() int64      { return p.offsets().LogStart }
func (p *Partition) LocalLogStartOffset() int64 { return p.offsets().LogStart }
func (p *Partition) LogEndOffset() int64        { return p.offsets().HighWatermark }

// HighestTieredOffset: everything committed is in the bucket.
func (p *Partition) HighestTieredOffset() int64 { return p.offsets().HighWatermark - 1 }

// Size is not known without summing the index: 0, as for a partition
// with nothing on this agent's disk.
func (p *Partition) Size() int64 { return 0 }

// AbortedTransactions: no transactional batch is ever committed to a
// diskless partition yet (AppendDeferred), so none was aborted.
func (p *Partition) AbortedTransactions(context.Context, int64, int64) ([]log.AbortedTxn, error) {
	return nil, nil
}

// Producers: the producer state lives with the coordinator, on another
// agent; DescribeProducers lists none here.
func (p *Partition) Producers() []log.ProducerInfo { return nil }

// FindByTimestamp returns the first batch whose max timestamp is at
// least ts, stamped, or nil when none is.
func (p *Partition) FindByTimestamp(ctx context.Context, ts int64) ([]byte, error) {
	a, err := p.s.index(ctx, p.key, disklesswire.OpByTimestamp, ts, 1)
	if err != nil || len(a.Batches) == 0 {
		return nil, err
	}
	return p.s.read(ctx, a.Batches[:1], 0, true, a.HighWatermark)
}

func (p *Partition) MaxTimestampBatch() ([]byte, error) { return nil, ErrNoMaxTimestamp }

// WatchData and UnwatchData: no follower ever fetches a diskless
// partition.
func (p *Partition) WatchData(chan<- struct{})   {}
func (p *Partition) UnwatchData(chan<- struct{}) {}

// DecompressionChecks: every diskless batch was checked by Produce.
func (p *Partition) DecompressionChecks() dataplane.DecompressionChecks { return nil }

func (p *Partition) DeleteRecordsBefore(context.Context, int64) error { return ErrDeleteRecords }

// OffsetForLeaderEpoch answers from the coordinator's epoch history.
func (p *Partition) OffsetForLeaderEpoch(currentEpoch, epoch int32) (int32, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	a, err := p.s.index(ctx, p.key, disklesswire.OpEpochEnd, int64(epoch), 1)
	if err != nil {
		return -1, -1, err
	}
	return a.Epoch, a.EndOffset, nil
}

// ReplicaRead: a diskless partition has no followers.
func (p *Partition) ReplicaRead(int32, int32, int64, int, bool) (dataplane.ReplicaReadResult, error) {
	return dataplane.ReplicaReadResult{HighWatermark: -1, LogStartOffset: -1}, fmt.Errorf("%w: diskless partitions have no followers", dataplane.ErrNotLeader)
}

// OpenDiskless returns partitions [first, t.Partitions) of the diskless
// topic t (agent/topics' DisklessPartitions): every agent serves every
// partition of a diskless topic, with nothing to open.
func (s *Service) OpenDiskless(_ context.Context, t metadata.Topic, _ metadata.Resolved, first int32) ([]dataplane.Partition, error) {
	out := make([]dataplane.Partition, 0, max(t.Partitions-first, 0))
	for i := first; i < t.Partitions; i++ {
		out = append(out, s.Partition(t.ID, i))
	}
	return out, nil
}
