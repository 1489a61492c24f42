package log

// The seam through which tiering's remote compactor (tiering/compact.go,
// docs/design.md §7) applies this package's cleaner rules to segments that
// live in the bucket rather than in a log directory. It adds no rule of
// its own: a batch's keys go into the map as buildOffsetMap puts them
// (mapBatch), and Filter is cleanBatch, transaction rules included
// (cleantxn.go), so the two cannot drift apart.
//
// What differs is what the pass knows. The local cleaner has every
// aborted transaction of its log; the remote pass has the transaction
// indexes of its run, which name the aborted transactions whose markers
// lie in the run. A transaction whose marker lies above the run (in the
// manifest's last entry, or only in the local log) is undecided here:
// its batches are kept whole and stay out of the map, as before this
// seam knew transactions, until a later pass's run reaches its marker.
// NoteProducer, which sees the whole run before Map, finds them.

import (
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// RemotePass is what a remote pass gives the cleaner besides batches.
type RemotePass struct {
	Now             time.Time
	DeleteRetention time.Duration // delete.retention.ms: a removable marker's delete horizon
	// Aborted are the aborted transactions of the run's transaction
	// indexes, in any order; not retained.
	Aborted []AbortedTxn
}

// BatchCleaner applies the cleaner's rules to batches handed to it one at a
// time: NoteProducer over every batch of the run, then Map over the
// batches from the first dirty one on, then Filter over every batch to
// rewrite, each oldest first. Not safe for concurrent use; it owns its
// OffsetMap meanwhile.
type BatchCleaner struct {
	m       *OffsetMap
	aborted []AbortedTxn
	// lastMarker is each producer's newest marker in the run: its
	// transactional batches past it are undecided.
	lastMarker map[int64]int64
	// mapTxns follows transactions for Map, from its first batch on, as
	// buildOffsetMap's does from the first dirty offset.
	mapTxns *txnCleaner
	// plan holds what cleanBatch reads of a local pass: the time, the
	// delete retention, each producer's last batch (NoteProducer), and
	// the transactions Filter follows from its first batch on (txns).
	plan cleanPlan
}

// NewBatchCleaner resets m and returns a cleaner over it for one pass.
func NewBatchCleaner(m *OffsetMap, pass RemotePass) *BatchCleaner {
	m.Reset()
	return &BatchCleaner{m: m, aborted: append([]AbortedTxn(nil), pass.Aborted...), lastMarker: map[int64]int64{},
		plan: cleanPlan{nowMs: pass.Now.UnixMilli(), cfg: Config{DeleteRetention: pass.DeleteRetention},
			producerLast: map[int64]int64{}}}
}

// NoteProducer records a batch's producer as the newest seen, so that
// Filter keeps that producer's last batch (Kafka's RETAIN_EMPTY), and a
// marker as closing its producer's transaction within the run. The
// caller passes every batch of the run, oldest first, before any Map.
func (c *BatchCleaner) NoteProducer(raw []byte) error {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return err
	}
	if h.HasProducer() {
		c.plan.producerLast[h.ProducerID] = h.LastOffset()
	}
	if h.IsControl() {
		c.lastMarker[h.ProducerID] = h.LastOffset()
	}
	return nil
}

// undecided reports whether h is transactional data whose marker is not
// in the run.
func (c *BatchCleaner) undecided(h *batch.Header) bool {
	if !h.IsTransactional() || h.IsControl() {
		return false
	}
	m, ok := c.lastMarker[h.ProducerID]
	return !ok || m < h.BaseOffset
}

// Map adds the keys of one batch to the map, as buildOffsetMap does:
// aborted data stays out, and so do undecided transactional batches,
// control batches, and batches past the decompression bound (Filter
// keeps those whole, or drops the aborted ones). It reports false when
// the map filled; the keys put before that stay in it, which is safe as
// long as the batch stays in the log (it only lets older records of
// those keys be dropped).
func (c *BatchCleaner) Map(raw []byte) (bool, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return false, err
	}
	if c.mapTxns == nil {
		c.mapTxns = newTxnCleaner(c.aborted, h.BaseOffset)
	}
	if c.undecided(&h) {
		return true, nil
	}
	full, _, err := mapBatch(&h, raw, c.mapTxns, c.m, h.BaseOffset)
	if err != nil {
		return false, fmt.Errorf("log: batch at %d: %w", h.BaseOffset, err)
	}
	return !full, nil
}

// Keys is how many keys the map holds.
func (c *BatchCleaner) Keys() int { return c.m.Len() }

// Filter is the cleaner's rule for one batch (cleanBatch): the batch to
// write (raw, a rebuilt one, or nil to drop it) and the records dropped.
// Records at or past end are kept; tombstones are dropped only with
// dropTombstones. Undecided transactional batches are kept whole.
func (c *BatchCleaner) Filter(raw []byte, end int64, dropTombstones bool) ([]byte, int64, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return nil, 0, err
	}
	if c.plan.txns == nil {
		c.plan.txns = newTxnCleaner(c.aborted, h.BaseOffset)
	}
	if c.undecided(&h) {
		return raw, 0, nil
	}
	return cleanBatch(&h, raw, &c.plan, c.m, end, dropTombstones)
}

// TakeIndex returns the aborted transactions whose markers Filter kept
// with their data since the last call, in marker order: the entries of
// the rewritten objects' transaction indexes (an abort marker kept only
// until its delete horizon has no entry, as in a cleaned local segment).
func (c *BatchCleaner) TakeIndex() []AbortedTxn {
	if c.plan.txns == nil {
		return nil
	}
	return c.plan.txns.takeIndex()
}

// SegmentBuilder tracks the batches of a segment being written elsewhere
// (a compacted object) and gives its indexes in Kafka's layout, as the
// log's own segments keep them.
type SegmentBuilder struct {
	s        segment
	interval int
}

// NewSegmentBuilder starts an empty segment at base, indexed every
// interval bytes (index.interval.bytes).
func NewSegmentBuilder(base int64, interval int) *SegmentBuilder {
	b := &SegmentBuilder{s: segment{base: base}, interval: interval}
	b.s.reset()
	return b
}

// Add tracks the next batch, which the caller writes at position Size().
func (b *SegmentBuilder) Add(raw []byte) error {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return err
	}
	if h.BaseOffset < b.s.next || !b.s.fits(len(raw), h.LastOffset()) {
		return fmt.Errorf("%w: batch [%d, %d] does not follow %d in segment %d or passes the index limits",
			ErrInvalidBatch, h.BaseOffset, h.LastOffset(), b.s.next, b.s.base)
	}
	b.s.track(&h, b.s.size, b.interval)
	return nil
}

// Size is the bytes added so far.
func (b *SegmentBuilder) Size() int64 { return b.s.size }

// MaxTimestamp is the newest batch timestamp, -1 when none.
func (b *SegmentBuilder) MaxTimestamp() int64 { return b.s.maxTs }

// OffsetIndex is the .index file's bytes.
func (b *SegmentBuilder) OffsetIndex() []byte { return encodeOffsets(b.s.idx.offsets) }

// TimeIndex is the .timeindex file's bytes; like a sealed segment's, it
// ends with the newest timestamp.
func (b *SegmentBuilder) TimeIndex() []byte {
	b.s.addTimeEntry()
	return encodeTimes(b.s.idx.times)
}
