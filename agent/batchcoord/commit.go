package batchcoord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
)

// ErrControlBatch: a writer asked to commit a control batch in an
// object, or an inline batch that is not a transaction marker: markers
// are committed inline, and only they are.
var ErrControlBatch = errors.New("batchcoord: only transaction markers are committed inline, and only inline")

// ErrAppend: a commit's append failed (the coordinator's partition
// moved, or lost its in-sync replicas): whether it is durable is not
// known, so the writer sends the object's commit again rather than give
// its batches up. It hides the append's own error, which may say
// NOT_COORDINATOR: that code means "not committed" when the lookup gives
// it.
var ErrAppend = errors.New("batchcoord: the commit's append failed; it may or may not be durable")

// ErrNoGuard: a transactional batch that would open its producer's
// transaction in the partition has no verification guard standing (a
// marker ended the transaction since it was verified, or the coordinator
// moved); the wire server answers NOT_LEADER_OR_FOLLOWER, and the
// client's retry verifies again.
var ErrNoGuard = errors.New("batchcoord: no verification guard stands for the producer's transaction")

// CommitBatch is one batch of an uploaded object, for a diskless
// partition this coordinator owns.
type CommitBatch struct {
	Key      PartitionKey
	Position int64 // in the object's data section
	Size     int32
	Header   batch.Header // as produced: its base offset is 0
	// Inline is a transaction marker's control batch, committed without
	// an object (the commit's object id is zero); nil otherwise.
	Inline []byte
}

// CommitResult is what a commit decided for one batch: its base offset
// (the original one for a duplicate), or the refusal in Err.
type CommitResult struct {
	BaseOffset int64
	LogStart   int64
	Duplicate  bool
	Err        error
}

// pendingRun is one partition's share of a commit being decided.
type pendingRun struct {
	key  RunKey
	p    *partState
	run  Run
	next int64
	done []*producers.Completed // what its markers did, applied once durable
}

// Commit decides the batches of object id, cut at cutMs, in order (each
// partition's in the order its producers sent them), appends the
// decisions as one record batch of Run records, durably, and only then
// applies them and answers: one result per batch. A batch already
// committed by an earlier commit of the same object gets that commit's
// offset. An error means nothing was committed by this call; when it
// comes from the append, the coordinator closes itself, since its
// producer state is ahead of its log, and the caller's next lookup loads
// it again from the log.
func (c *Coordinator) Commit(ctx context.Context, id [16]byte, cutMs int64, batches []CommitBatch) ([]CommitResult, error) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	now := c.cfg.Now()
	if age := now.UnixMilli() - cutMs; c.cfg.CommitTimeout > 0 && age > c.cfg.CommitTimeout.Milliseconds() {
		return nil, fmt.Errorf("%w: object %x cut %d ms ago", ErrCommitTooOld, id, age)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	c.pruneLocked(now)
	results, runs := c.decideLocked(id, batches)
	if len(runs) == 0 {
		return results, nil
	}
	raw, err := buildRuns(runs, id, c.cfg.Epoch, now)
	if err != nil {
		c.closeLocked() // producer state already moved on
		return nil, err
	}
	if err := c.appendLocked(ctx, raw); err != nil {
		return nil, fmt.Errorf("%w: object %x: %v", ErrAppend, id, err)
	}
	for _, r := range runs {
		if err := c.applyIndexLocked(r); err != nil {
			c.closeLocked()
			return nil, err
		}
		if id != ([16]byte{}) {
			c.remember(id, now.UnixMilli(), r.key, r.run)
		}
	}
	return results, nil
}

// decideLocked decides each batch against the producer state, which it
// updates as it goes, and gathers the appended ones into runs, one per
// partition, in the order partitions first appear.
func (c *Coordinator) decideLocked(id [16]byte, batches []CommitBatch) ([]CommitResult, []*pendingRun) {
	var prior *committedObject
	if id != ([16]byte{}) {
		prior = c.recent[id]
	}
	results := make([]CommitResult, len(batches))
	var runs []*pendingRun
	byKey := map[PartitionKey]*pendingRun{}
	for i, b := range batches {
		p := c.part(b.Key)
		results[i].LogStart = p.logStart
		if prior != nil {
			if off, ok := prior.offsets[placedKey{b.Key, b.Position}]; ok {
				results[i].BaseOffset = off
				continue
			}
		}
		h := b.Header
		m, err := c.admit(p, &h, b.Inline)
		if err != nil {
			results[i].Err = err
			continue
		}
		dup, err := p.producers.Check(&h, m)
		switch {
		case err != nil:
			results[i].Err = err
			continue
		case dup != nil:
			results[i].BaseOffset, results[i].Duplicate = dup.FirstOffset, true
			continue
		}
		r := byKey[b.Key]
		if r == nil {
			r = &pendingRun{key: RunKey{b.Key, p.index.End()}, p: p, next: p.index.End(),
				run: Run{ObjectID: id, Epoch: c.cfg.Epoch}}
			byKey[b.Key] = r
			runs = append(runs, r)
		}
		h.BaseOffset = r.next
		if done := p.producers.Update(&h, m); done != nil {
			delete(p.guards, done.ProducerID)
			r.done = append(r.done, done)
		}
		r.run.Batches = append(r.run.Batches, StoredBatch{
			OffsetDelta: int32(r.next - r.key.BaseOffset), LastOffsetDelta: h.LastOffsetDelta,
			Position: b.Position, Size: b.Size, MaxTimestamp: h.MaxTimestamp,
			ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
			Attributes: h.Attributes, Inline: b.Inline,
		})
		results[i].BaseOffset = r.next
		r.next = h.NextOffset()
	}
	return results, runs
}

// admit checks what a batch may be before the producer rules decide it:
// a marker comes inline and only a marker does; a transactional batch
// that would open its producer's transaction needs its guard (KIP-890).
// It returns a marker's contents.
func (c *Coordinator) admit(p *partState, h *batch.Header, inline []byte) (batch.Marker, error) {
	if h.IsControl() != (inline != nil) {
		return batch.Marker{}, ErrControlBatch
	}
	if h.IsControl() {
		m, err := batch.ParseMarker(inline)
		if err != nil || m.Type != batch.ControlAbort && m.Type != batch.ControlCommit {
			return batch.Marker{}, fmt.Errorf("%w: %v", ErrControlBatch, err)
		}
		return m, nil
	}
	if h.IsTransactional() && !p.producers.TxnOpen(h.ProducerID, h.ProducerEpoch) {
		if g, ok := p.guards[h.ProducerID]; !ok || g != h.ProducerEpoch {
			return batch.Marker{}, fmt.Errorf("%w: producer %d epoch %d", ErrNoGuard, h.ProducerID, h.ProducerEpoch)
		}
	}
	return batch.Marker{}, nil
}

// buildRuns encodes the Run records of one commit as one batch.
func buildRuns(runs []*pendingRun, id [16]byte, epoch int32, now time.Time) ([]byte, error) {
	recs := make([]batch.Record, 0, len(runs))
	for i, r := range runs {
		r.run.CommitMs = now.UnixMilli()
		v, err := EncodeRun(r.run)
		if err != nil {
			return nil, fmt.Errorf("batchcoord: the commit of object %x: %w", id, err)
		}
		recs = append(recs, batch.Record{OffsetDelta: int32(i), Key: EncodeRunKey(r.key), Value: v})
	}
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = now.UnixMilli()
	opts.PartitionLeaderEpoch = epoch
	return batch.Build(opts, recs)
}

// applyIndexLocked adds a durable run to its partition's index and
// wakes the partition's long polls.
func (c *Coordinator) applyIndexLocked(r *pendingRun) error {
	p := r.p
	if err := p.extend(r.key, r.run); err != nil {
		return err
	}
	for _, done := range r.done {
		p.completed(done)
	}
	close(p.moved)
	p.moved = make(chan struct{})
	return nil
}

// pruneLocked forgets the objects committed longer ago than the commit
// timeout: no writer commits them again.
func (c *Coordinator) pruneLocked(now time.Time) {
	oldest := now.Add(-c.cfg.CommitTimeout).UnixMilli()
	for id, o := range c.recent {
		if o.cutMs < oldest {
			delete(c.recent, id)
		}
	}
}

// appendLocked appends raw durably with the mutex released (commitMu
// keeps the order of appends). A failure, or a Close meanwhile, closes
// the coordinator: its memory may be ahead of its log.
func (c *Coordinator) appendLocked(ctx context.Context, raw []byte) error {
	c.mu.Unlock()
	err := c.log.Append(ctx, raw)
	c.mu.Lock()
	if err == nil && c.closed {
		err = ErrClosed
	}
	if err != nil {
		c.closeLocked()
	}
	return err
}

// closeLocked is Close with the mutex held.
func (c *Coordinator) closeLocked() {
	if c.closed {
		return
	}
	c.closed = true
	for _, p := range c.parts {
		close(p.moved)
		p.moved = make(chan struct{})
	}
}
