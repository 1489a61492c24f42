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
	"github.com/strata-streaming/strata/agent/peer"
)

// ErrGuard: the batch coordinator could not stand a transactional
// batch's verification guard (it is moving or unreachable); nothing was
// buffered, and the client retries.
var ErrGuard = errors.New("diskless: could not guard the transactional batch with its coordinator")

// viewMaxAge is how old a partition's offsets may be when answered
// without asking its coordinator: Fetch reads refresh them, and the
// index follower keeps the followed ones fresh.
const viewMaxAge = 2 * time.Second

// lookupTimeout bounds a coordinator question asked on behalf of a
// caller without a context (the offsets of ListOffsets and Metadata).
const lookupTimeout = 5 * time.Second

// Partition is one partition of a diskless topic as this agent serves
// it: every agent leads every diskless partition (docs/design.md §7a;
// Metadata names one of the client's rack, agent/kafka/disklessmeta.go),
// writes go through the Service's buffer and reads ask the partition's
// coordinator. It implements dataplane.Partition; safe for concurrent
// use.
type Partition struct {
	s     *Service
	key   batchcoord.PartitionKey
	index int32
	topic string
}

var _ dataplane.Partition = (*Partition)(nil)
var _ dataplane.DeferredWriter = (*Partition)(nil)

// Partition returns partition index of the diskless topic topicID.
func (s *Service) Partition(topic string, topicID [16]byte, index int32) *Partition {
	return &Partition{s: s, key: batchcoord.PartitionKey{TopicID: topicID, Partition: index}, index: index, topic: topic}
}

func (p *Partition) Index() int32      { return p.index }
func (p *Partition) Leader() int32     { return p.s.self }
func (p *Partition) Replicas() []int32 { return []int32{p.s.self} }
func (p *Partition) ISR() []int32      { return []int32{p.s.self} }
func (p *Partition) Local() bool       { return true }

// LeaderEpoch is the leader epoch of the coordinator's partition of
// __diskless_state, which every agent reads from the same state and
// which only grows: clients checking epochs (KIP-320) accept any
// agent's answer. It is the higher of this agent's view of that
// partition's state, which a new election reaches within moments of the
// agent that took over, and the highest epoch this partition's
// coordinator answered with (View.Epoch): the index follower learns
// every partition it polls with the Coord of one of them, whose
// coordinator partition may be at another epoch, and a late answer must
// not move the epoch back; a cached view alone would lag an election by
// up to viewMaxAge, and a client that asked the agent that took over
// first would see the epoch go back here and keep a dead leader.
func (p *Partition) LeaderEpoch() int32 {
	seen := p.s.epochSeen(p.key)
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	epoch, err := p.s.host.CoordinatorEpoch(ctx, p.key.TopicID, p.key.Partition)
	if err != nil {
		// An older epoch known here, rather than 0, which clients would
		// take for the epoch going back.
		return seen
	}
	return max(epoch, seen)
}

// RefreshOffsets implements dataplane.OffsetsRefresher: ListOffsets asks
// the coordinator, so that its answer includes every record acknowledged
// before it, on any agent, as a Kafka leader's does; a coordinator that
// cannot be reached is NOT_LEADER_OR_FOLLOWER, which clients retry,
// rather than an old answer.
func (p *Partition) RefreshOffsets(ctx context.Context) error {
	if _, err := p.s.index(ctx, p.key, disklesswire.OpRead, -1, 1); err != nil {
		return fmt.Errorf("%w: diskless partition's coordinator: %w", dataplane.ErrNotLeader, err)
	}
	return nil
}

// AppendDeferred implements dataplane.DeferredWriter: the batch joins the
// write buffer, and wait returns its offsets once its object is
// uploaded and committed.
func (p *Partition) AppendDeferred(ctx context.Context, raw []byte, _ int16, _ *string, _ bool, verify dataplane.VerifyTxn) (func(context.Context) (log.AppendResult, error), error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return nil, err
	}
	if h.IsTransactional() {
		if err := p.s.verify(ctx, p.key, &h, verify); err != nil {
			return nil, err
		}
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
	if offset < a.CompactedEnd {
		tp, err := p.s.remote(ctx, p.key, p.topic, a.CompactedEnd)
		if err != nil {
			return nil, err
		}
		return tp.Read(ctx, offset, maxBytes, minOne)
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

// AbortedTransactions are the aborted transactions overlapping [from,
// upper), from the coordinator.
func (p *Partition) AbortedTransactions(ctx context.Context, from, upper int64) ([]log.AbortedTxn, error) {
	var out []log.AbortedTxn
	if end := p.offsets().CompactedEnd; from < end {
		tp, err := p.s.remote(ctx, p.key, p.topic, end)
		if err != nil {
			return nil, err
		}
		below, _, err := tp.AbortedTransactions(ctx, from, min(upper, end))
		if err != nil {
			return nil, err
		}
		out = append(out, below...)
	}
	above, err := p.s.aborted(ctx, p.key, from, upper)
	return append(out, above...), err
}

// Producers: the producer state lives with the coordinator, on another
// agent; DescribeProducers lists none here.
func (p *Partition) Producers() []log.ProducerInfo { return nil }

// FindByTimestamp returns the first batch whose max timestamp is at
// least ts, stamped, or nil when none is.
func (p *Partition) FindByTimestamp(ctx context.Context, ts int64) ([]byte, error) {
	if v := p.offsets(); v.CompactedEnd > v.LogStart {
		tp, err := p.s.remote(ctx, p.key, p.topic, v.CompactedEnd)
		if err != nil {
			return nil, err
		}
		if raw, err := tp.FindByTime(ctx, ts); err != nil || raw != nil {
			return raw, err
		}
	}
	a, err := p.s.index(ctx, p.key, disklesswire.OpByTimestamp, ts, 1)
	if err != nil || len(a.Batches) == 0 {
		return nil, err
	}
	return p.s.read(ctx, a.Batches[:1], 0, true, a.HighWatermark)
}

// MaxTimestampBatch returns the batch with the largest max timestamp,
// stamped, or nil when there is none (ListOffsets -3).
func (p *Partition) MaxTimestampBatch() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	a, err := p.s.index(ctx, p.key, disklesswire.OpMaxTime, 0, 1)
	if err != nil || len(a.Batches) == 0 {
		return nil, err
	}
	return p.s.read(ctx, a.Batches[:1], 0, true, a.HighWatermark)
}

// WatchData and UnwatchData: no follower ever fetches a diskless
// partition.
func (p *Partition) WatchData(chan<- struct{})   {}
func (p *Partition) UnwatchData(chan<- struct{}) {}

// DecompressionChecks: every diskless batch was checked by Produce.
func (p *Partition) DecompressionChecks() dataplane.DecompressionChecks { return nil }

// DeleteRecordsBefore raises the log start through the coordinator.
func (p *Partition) DeleteRecordsBefore(ctx context.Context, offset int64) error {
	co, err := p.s.host.Coordinator(ctx, p.key.TopicID, p.key.Partition)
	if err != nil {
		return err
	}
	req := &disklesswire.TrimRequest{TopicID: p.key.TopicID, Partition: p.key.Partition, Offset: offset}
	var start int64
	err = p.s.peers.Do(ctx, co.Agent, co.Addr, func(c *peer.Client) error {
		var err error
		start, err = c.DisklessTrim(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	p.s.learn(p.key, co, batchcoord.View{LogStart: start, Epoch: co.Epoch})
	return nil
}

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
		out = append(out, s.Partition(t.Name, t.ID, i))
	}
	return out, nil
}
