package batchcoord

// Retention (retention.ms, retention.bytes) of diskless partitions, until
// object compaction moves their older batches into tiered segments: the
// coordinator raises a partition's log start, and drops from its index
// the Runs wholly below it. One record batch makes it durable: the
// partition's new Partition record (log start, the new start of the
// index, the epochs, the producer state there) and the tombstones of the
// Runs dropped, which the cleaner then removes. Objects that lose their
// last Run are no longer referenced, and the orphan janitor deletes them.
//
// The index may only start where a Run does (a Run is tombstoned whole),
// so its start is the last Run boundary at or below the log start; reads
// below the log start are refused whatever the index still holds.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
)

// Keys lists the diskless partitions the coordinator holds.
func (c *Coordinator) Keys() []PartitionKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]PartitionKey, 0, len(c.parts))
	for k := range c.parts {
		out = append(out, k)
	}
	return out
}

// RetentionPoint is where k's log would start under retentionMs and
// retentionBytes (each -1: no limit) at nowMs, and whether that is above
// its log start: the batches below it are the expired prefix (whose max
// timestamp is older than the limit, stopping at the first that is not,
// as Kafka's segments expire in order) and those that put the partition
// over its byte limit, oldest first.
func (c *Coordinator) RetentionPoint(k PartitionKey, nowMs, retentionMs, retentionBytes int64) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.parts[k]
	if !ok || c.closed {
		return 0, false
	}
	start := p.logStart
	var kept []Located
	for _, b := range p.index.batches {
		if b.LastOffset >= start {
			kept = append(kept, b)
		}
	}
	if retentionMs >= 0 {
		cutoff := nowMs - retentionMs
		for len(kept) > 0 && kept[0].MaxTimestamp < cutoff {
			start, kept = kept[0].LastOffset+1, kept[1:]
		}
	}
	if retentionBytes >= 0 {
		var total int64
		for _, b := range kept {
			total += int64(b.Size)
		}
		for len(kept) > 0 && total > retentionBytes {
			total -= int64(kept[0].Size)
			start, kept = kept[0].LastOffset+1, kept[1:]
		}
	}
	return start, start > p.logStart
}

// Retain raises k's log start to logStart (at most its high watermark)
// as the file comment says. An append that fails closes the coordinator,
// as a failed commit does.
func (c *Coordinator) Retain(ctx context.Context, k PartitionKey, logStart int64) error {
	return c.moveStart(ctx, k, logStart, -1)
}

// Compacted moves the start of k's index to end, a Run boundary, once
// object compaction put the batches below it into the partition's tiered
// segments (compact.go); the log start stays.
func (c *Coordinator) Compacted(ctx context.Context, k PartitionKey, end int64) error {
	return c.moveStart(ctx, k, -1, end)
}

// moveStart raises k's log start to logStart, or (logStart -1) the start
// of its index to indexStart, with one Partition record.
func (c *Coordinator) moveStart(ctx context.Context, k PartitionKey, logStart, indexStart int64) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	p, ok := c.parts[k]
	if !ok {
		return nil
	}
	newStart, dropped := p.index.Start(), 0
	if logStart >= 0 {
		if logStart <= p.logStart {
			return nil
		}
		logStart = min(logStart, p.index.End())
		for i, b := range p.runStarts {
			if b > logStart {
				break
			}
			newStart, dropped = b, i
		}
		if logStart == p.index.End() {
			newStart, dropped = logStart, len(p.runStarts)
		}
	} else {
		logStart = p.logStart
		if indexStart <= p.index.Start() {
			return nil
		}
		dropped = len(p.runStarts)
		for i, b := range p.runStarts {
			if b >= indexStart {
				dropped = i
				break
			}
		}
		if indexStart != p.index.End() && (dropped == len(p.runStarts) || p.runStarts[dropped] != indexStart) {
			return fmt.Errorf("batchcoord: %x/%d: %d is not where a Run starts", k.TopicID, k.Partition, indexStart)
		}
		newStart = indexStart
	}
	snap, err := p.snapshotAt(newStart)
	if err != nil {
		return err
	}
	rec := Partition{LogStart: logStart, CompactedEnd: newStart, Epochs: p.epochs, Snapshot: snap}
	raw, err := buildRetain(k, rec, p.runStarts[:dropped], c.cfg.Epoch, c.cfg.Now())
	if err != nil {
		return err
	}
	if err := c.appendLocked(ctx, raw); err != nil {
		return fmt.Errorf("batchcoord: append the new start of %x/%d: %w", k.TopicID, k.Partition, err)
	}
	if err := p.index.TrimTo(newStart); err != nil {
		c.closeLocked()
		return err
	}
	p.logStart, p.baseSnap = logStart, snap
	p.runStarts = append([]int64(nil), p.runStarts[dropped:]...)
	kept := p.aborted[:0]
	for _, a := range p.aborted {
		if a.LastOffset >= newStart {
			kept = append(kept, a)
		}
	}
	p.aborted = kept
	close(p.moved)
	p.moved = make(chan struct{})
	return nil
}

// CompactionPlan returns the batches object compaction should move into
// k's next tiered segment, from the start of its index: up to the first
// Run boundary at which they reach segmentBytes, or all of them when the
// oldest was committed before olderThanMs (the index always ends at a
// Run boundary). None when neither holds.
func (c *Coordinator) CompactionPlan(k PartitionKey, segmentBytes int64, olderThanMs int64) []Located {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.parts[k]
	if !ok || c.closed || p.index.Len() == 0 {
		return nil
	}
	bs := p.index.batches
	starts := map[int64]bool{}
	for _, b := range p.runStarts {
		starts[b] = true
	}
	var total int64
	for i, b := range bs {
		if i > 0 && starts[b.BaseOffset] && total >= segmentBytes {
			return append([]Located(nil), bs[:i]...)
		}
		total += int64(b.Size)
	}
	if total >= segmentBytes || bs[0].CommitMs < olderThanMs {
		return append([]Located(nil), bs...)
	}
	return nil
}

// snapshotAt is the producer state at offset end, within the index:
// the state at the index's start with the batches below end applied.
func (p *partState) snapshotAt(end int64) ([]byte, error) {
	ps := producers.New()
	if len(p.baseSnap) > 0 {
		var err error
		if _, ps, err = producers.Decode(p.baseSnap, true); err != nil {
			return nil, fmt.Errorf("batchcoord: producer snapshot: %w", err)
		}
	}
	for _, b := range p.index.batches {
		if b.BaseOffset >= end {
			break
		}
		h := b.header()
		m, err := markerOf(&h, b.Inline)
		if err != nil {
			return nil, err
		}
		ps.Update(&h, m)
	}
	return ps.Encode(end), nil
}

// buildRetain encodes a retention's Partition record and Run tombstones
// as one batch.
func buildRetain(k PartitionKey, rec Partition, dropped []int64, epoch int32, now time.Time) ([]byte, error) {
	v, err := EncodePartition(rec)
	if err != nil {
		return nil, err
	}
	recs := []batch.Record{{Key: EncodePartitionKey(k), Value: v}}
	for _, base := range dropped {
		recs = append(recs, batch.Record{OffsetDelta: int32(len(recs)), Key: EncodeRunKey(RunKey{k, base})})
	}
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = now.UnixMilli()
	opts.PartitionLeaderEpoch = epoch
	return batch.Build(opts, recs)
}

// ErrOffsetOutOfRange: DeleteRecords named an offset above the high
// watermark.
var ErrOffsetOutOfRange = errors.New("batchcoord: offset above the high watermark")

// DeleteRecords raises k's log start to offset (Kafka's DeleteRecords;
// a lower offset changes nothing) and returns the log start.
func (c *Coordinator) DeleteRecords(ctx context.Context, k PartitionKey, offset int64) (int64, error) {
	c.mu.Lock()
	p := c.part(k)
	hw, start := p.index.End(), p.logStart
	c.mu.Unlock()
	if offset < 0 || offset > hw {
		return -1, fmt.Errorf("%w: %d above %d", ErrOffsetOutOfRange, offset, hw)
	}
	if offset <= start {
		return start, nil
	}
	if err := c.Retain(ctx, k, offset); err != nil {
		return -1, err
	}
	return offset, nil
}
