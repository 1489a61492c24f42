package group

// Transactional offset commits (TxnOffsetCommit), as Kafka's group
// coordinator keeps them: the offsets are written to the group's
// partition at once, in a transactional batch of the producer, and held
// pending; the transaction's marker, written to the same partition by the
// transaction coordinator, applies them (commit) or drops them (abort).
// A coordinator that loads replays both, so pending offsets survive a
// failover of either coordinator.

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// groupPartition is one partition's offset of one group.
type groupPartition struct {
	group string
	tp    TopicPartition
}

// TxnCommit is one TxnOffsetCommit.
type TxnCommit struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	// MemberID, InstanceID and Generation (v3+) are checked as an
	// OffsetCommit's when Generation is not -1.
	MemberID   string
	InstanceID string
	Generation int32
	Offsets    map[TopicPartition]Offset
}

// CommitTxnOffsets writes r's offsets, pending until their transaction's
// marker (CompleteTxnOffsets).
func (c *Coordinator) CommitTxnOffsets(ctx context.Context, r TxnCommit) error {
	if r.Group == "" {
		return ErrInvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if g := c.groups[r.Group]; g != nil && r.Generation >= 0 && g.usesClassic() {
		gm, m, err := c.checkMemberLocked(r.Group, r.MemberID, r.InstanceID, r.Generation)
		if err != nil {
			return err
		}
		c.touchLocked(gm, m)
	}
	now := c.now()
	recs := make([]batch.Record, 0, len(r.Offsets))
	ds := make([]decoded, 0, len(r.Offsets))
	for _, tp := range sortedPartitions(r.Offsets) {
		o := r.Offsets[tp]
		o.CommitTime = now
		ds = append(ds, decoded{group: r.Group, tp: tp, offset: &o})
		recs = append(recs, offsetRecord(r.Group, tp, &o))
	}
	if len(recs) == 0 {
		return nil
	}
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = now.UnixMilli()
	opts.ProducerID, opts.ProducerEpoch = r.ProducerID, r.ProducerEpoch
	opts.Attributes = batch.AttrTransactional
	raw, err := batch.Build(opts, recs)
	if err != nil {
		return fmt.Errorf("group: encode records: %w", err)
	}
	if err := c.log.Append(ctx, raw); err != nil {
		return err
	}
	for _, d := range ds {
		c.addPendingTxn(r.ProducerID, d)
	}
	return nil
}

// addPendingTxn holds d until producerID's marker.
func (c *Coordinator) addPendingTxn(producerID int64, d decoded) {
	if d.offset == nil {
		return
	}
	p := c.pendingTxn[producerID]
	if p == nil {
		p = map[groupPartition]Offset{}
		c.pendingTxn[producerID] = p
	}
	p[groupPartition{d.group, d.tp}] = *d.offset
}

// CompleteTxnOffsets applies (commit) or drops producerID's pending
// offsets once its marker is committed in the partition.
func (c *Coordinator) CompleteTxnOffsets(producerID int64, commit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.completeTxnLocked(producerID, commit)
}

func (c *Coordinator) completeTxnLocked(producerID int64, commit bool) {
	p := c.pendingTxn[producerID]
	delete(c.pendingTxn, producerID)
	if !commit {
		return
	}
	for gp, o := range p {
		c.apply(decoded{group: gp.group, tp: gp.tp, offset: &o})
	}
}

// replayMarker completes a producer's pending offsets from a marker read
// at load.
func (c *Coordinator) replayMarker(h batch.Header, raw []byte) {
	m, err := batch.ParseMarker(raw)
	if err != nil || (m.Type != batch.ControlCommit && m.Type != batch.ControlAbort) {
		c.logger.Warn("skipping an unreadable control batch", "offset", h.BaseOffset, "err", err)
		return
	}
	c.completeTxnLocked(h.ProducerID, m.Type == batch.ControlCommit)
}

// PendingTxnOffsets returns the partitions of group with a transactional
// offset awaiting its marker: OffsetFetch with require_stable answers
// UNSTABLE_OFFSET_COMMIT for those.
func (c *Coordinator) PendingTxnOffsets(group string) map[TopicPartition]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[TopicPartition]bool{}
	for _, p := range c.pendingTxn {
		for gp := range p {
			if gp.group != group {
				continue
			}
			out[gp.tp] = true
		}
	}
	return out
}
