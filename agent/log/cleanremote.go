package log

// The seam through which tiering's remote compactor (tiering/compact.go,
// docs/design.md §7) applies this package's cleaner rules to segments that
// live in the bucket rather than in a log directory. For records outside
// transactions it adds no rule of its own: the map takes the keys
// buildOffsetMap takes and Filter is filterBatch, so the two cannot drift
// apart. Transactional batches and markers are the exception: the local
// cleaner's transaction rules (cleantxn.go) need the aborted transactions
// and marker state of the whole pass, which the seam does not carry, so
// here they are left out of the map and kept whole, the conservative rule
// (docs/design.md §7, tiered compaction).

import (
	"errors"
	"fmt"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// BatchCleaner applies the cleaner's rules to batches handed to it one at a
// time: first Map over the dirty batches, then Filter over every batch to
// rewrite. Not safe for concurrent use; it owns its OffsetMap meanwhile.
type BatchCleaner struct {
	m *OffsetMap
	// producerLast is each producer's newest batch seen by Map or
	// NoteProducer: that batch survives even when emptied.
	producerLast map[int64]int64
}

// NewBatchCleaner resets m and returns a cleaner over it.
func NewBatchCleaner(m *OffsetMap) *BatchCleaner {
	m.Reset()
	return &BatchCleaner{m: m, producerLast: map[int64]int64{}}
}

// NoteProducer records a batch's producer as the newest seen, so that
// Filter keeps that producer's last batch (Kafka's RETAIN_EMPTY). The
// caller passes every batch it will rewrite, oldest first.
func (c *BatchCleaner) NoteProducer(raw []byte) error {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return err
	}
	if h.HasProducer() {
		c.producerLast[h.ProducerID] = h.LastOffset()
	}
	return nil
}

// Map adds the keys of one dirty batch to the map, as buildOffsetMap does,
// except that transactional batches are left out too; control batches,
// and batches past the decompression bound, are left out as there (Filter
// keeps all of them whole). It reports
// false when the map filled; the keys put before that stay in it, which
// is safe as long as the batch stays in the log (it only lets older
// records of those keys be dropped).
func (c *BatchCleaner) Map(raw []byte) (bool, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return false, err
	}
	if h.IsControl() || h.IsTransactional() {
		return true, nil
	}
	_, recs, err := batch.Records(raw, cleanMaxDecompressed)
	if errors.Is(err, batch.ErrDecompressLimit) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("log: batch at %d: %w", h.BaseOffset, err)
	}
	for _, r := range recs {
		if r.Key != nil && !c.m.Put(r.Key, h.BaseOffset+int64(r.OffsetDelta)) {
			return false, nil
		}
	}
	return true, nil
}

// Keys is how many keys the map holds.
func (c *BatchCleaner) Keys() int { return c.m.Len() }

// Filter is the cleaner's rule for one batch (filterBatch): the batch to
// write (raw, a rebuilt one, or nil to drop it) and the records dropped.
// Records at or past end are kept; tombstones are dropped only with
// dropTombstones. Transactional and control batches are kept whole, here
// and not only in filterBatch: the remote compactor has no producer state
// to tell aborted data from committed, so it stays with the conservative
// rule whatever the local cleaner learns about transactions.
func (c *BatchCleaner) Filter(raw []byte, end int64, dropTombstones bool) ([]byte, int64, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return nil, 0, err
	}
	if h.IsControl() || h.IsTransactional() {
		return raw, 0, nil
	}
	return filterBatch(&h, raw, c.m, end, dropTombstones, c.producerLast)
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
