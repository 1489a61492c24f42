package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
	"github.com/strata-streaming/strata/internal/vfs"
)

// The log cleaner (cleanup.policy=compact), with Apache Kafka's semantics:
//
//   - The dirty section runs from the cleaner checkpoint (the first offset
//     not yet cleaned, cleaner-offset-checkpoint) to the first uncleanable
//     offset: the active segment's base, or the first sealed segment with a
//     record younger than min.compaction.lag.ms. The active segment is
//     never cleaned.
//   - A pass builds an OffsetMap, key -> latest offset, over the dirty
//     section; if the map fills, the pass ends where it filled (end).
//   - It then rewrites every sealed segment below end, in groups that
//     stay under segment.bytes (cleanswap.go), keeping a record when it is
//     the latest of its key in the map, or its offset is at or past end,
//     or its key is not in the map (it is older than the dirty section and
//     nothing newer replaced it). A tombstone (null value) is dropped once
//     its segment's newest record is older than delete.retention.ms.
//     Records without a key are dropped, as Kafka's cleaner does.
//   - Offsets are kept: a rewritten batch keeps its base offset, last
//     offset delta, producer id, epoch and base sequence, so the log gains
//     gaps but no offset moves. A batch left with no records is dropped,
//     except the last batch of a producer in the producer state, which is
//     kept empty so that an idempotent producer's sequence survives a
//     restart (Kafka's BatchRetention.RETAIN_EMPTY).
//   - Transactions (txn.go) follow Kafka's rules (cleantxn.go): nothing
//     at or past the first unstable offset is cleaned; aborted
//     transactional batches are removed and never enter the map; committed
//     ones are compacted like any batch; a transaction marker stays while
//     its transaction has data in the log, then for delete.retention.ms
//     more (a delete horizon stamped in the batch), and then goes. The
//     cleaned segment's aborted-transaction index keeps the entries whose
//     marker it keeps and whose data the pass still read.
//   - The checkpoint then moves to end.
//
// Clean is called by one cleaner goroutine per agent; a per-log mutex
// keeps two calls on one log apart. Reads, appends, retention and
// replication go on while a pass reads and writes: each segment is pinned
// while the pass reads it, and the swap of a group takes the log's lock
// only to check that the group is still the log's and to rename files.

const (
	cleanerCheckpointName = "cleaner-offset-checkpoint"
	cleanedSuffix         = ".log.cleaned"
	swapSuffix            = ".swap"
)

var magicCleaner = [4]byte{'S', 'L', 'C', 'O'}

// cleanMaxDecompressed bounds one batch's records as the cleaner opens
// it. A batch past it (a topic with a huge max.message.bytes) is kept
// whole and its keys left out of the map: the pass then keeps more than
// it must, never less.
const cleanMaxDecompressed = batch.DefaultMaxDecompressed

// ErrOffsetMapTooSmall is a pass whose offset map filled before it had
// read any record: --log-cleaner-dedupe-buffer-size is too small.
var ErrOffsetMapTooSmall = errors.New("log: cleaner offset map too small for one segment")

// errCleanRaced: the segments of a group changed (retention, truncation)
// while they were cleaned; the group is skipped and retried next pass.
var errCleanRaced = errors.New("log: segments changed while cleaned")

// CleanState describes how much of a compacted log is dirty; the agent's
// cleaner picks the log with the highest ratio among the eligible ones.
type CleanState struct {
	Compact    bool
	FirstDirty int64 // cleaner checkpoint, clamped to the log
	// FirstUncleanable is the active segment's base, or below it the base
	// of the first segment younger than min.compaction.lag.ms, or holding
	// an open transaction's records, or records at or past the caller's
	// high watermark.
	FirstUncleanable int64
	CleanBytes       int64 // sealed segments wholly below FirstDirty
	DirtyBytes       int64 // sealed segments from FirstDirty to FirstUncleanable
	DirtyRatio       float64
	// Overdue: a dirty record is older than max.compaction.lag.ms, so the
	// log is cleaned whatever its ratio.
	Overdue bool
	// Eligible: compacted, with dirty bytes, and at or above
	// min.cleanable.dirty.ratio or Overdue.
	Eligible bool
}

// CleanState reports the log's dirty section as of now. Records at or
// past highWatermark are not cleanable: as in Kafka, whose cleaner stops
// at the last stable offset, a value not yet committed must not clean
// away the committed one it replaces, since a new leader may never have
// it. A log without replicas passes its end.
func (l *Log) CleanState(highWatermark int64) CleanState {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return CleanState{}
	}
	return l.cleanStateLocked(l.now().UnixMilli(), highWatermark)
}

func (l *Log) cleanStateLocked(nowMs, highWatermark int64) CleanState {
	st := CleanState{Compact: l.cfg.Compact}
	active := l.active()
	st.FirstDirty = min(max(l.firstDirty, l.segs[0].base), active.base)
	st.FirstUncleanable = active.base
	// Nothing at or past the first open transaction is cleaned, as in
	// Kafka: its records may yet be aborted.
	unstable := l.producers.FirstUnstable()
	lagMs := l.cfg.MinCompactionLag.Milliseconds()
	maxLagMs := l.cfg.MaxCompactionLag.Milliseconds()
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.next <= st.FirstDirty {
			st.CleanBytes += s.size
			continue
		}
		if lagMs > 0 && nowMs-l.newestMs(s) < lagMs || unstable >= 0 && s.next > unstable || s.next > highWatermark {
			st.FirstUncleanable = s.base
			break
		}
		if st.DirtyBytes == 0 && maxLagMs > 0 && s.firstTs >= 0 && nowMs-s.firstTs > maxLagMs {
			st.Overdue = true
		}
		st.DirtyBytes += s.size
	}
	if total := st.CleanBytes + st.DirtyBytes; total > 0 {
		st.DirtyRatio = float64(st.DirtyBytes) / float64(total)
	}
	st.Eligible = st.Compact && st.DirtyBytes > 0 && (st.DirtyRatio >= l.cfg.MinCleanableDirtyRatio || st.Overdue)
	return st
}

// CleanResult is what one pass did.
type CleanResult struct {
	FirstDirty, End int64 // the offsets cleaned: [FirstDirty, End) was dirty
	BytesRead       int64 // segment bytes read (map pass and rewrite)
	BytesWritten    int64 // cleaned segment bytes written
	SegmentsBefore  int   // sealed segments rewritten
	SegmentsAfter   int   // segments they became
	RecordsDropped  int64
}

// cleanPlan is one pass's view of the log, taken under the lock: the
// sealed segments up to the first uncleanable one, and the settings in
// force when the pass began. The segments are not pinned for the pass
// (a log of thousands would hold as many files open): each is pinned
// while it is read, and a segment that retention or a truncation took
// away meanwhile ends the pass (errCleanRaced), to be retried.
type cleanPlan struct {
	segs             []*segment
	sizes, nexts     []int64 // segs' sizes and next offsets at plan time (sealed: fixed)
	newest           []int64 // newest timestamp of each (delete horizon)
	firstDirty       int64
	firstUncleanable int64
	cfg              Config
	nowMs            int64
	// producerLast maps a producer id to the last offset of its newest
	// batch: that batch survives cleaning even when emptied.
	producerLast map[int64]int64
	// abortedTxns are the log's aborted transactions that began below
	// firstUncleanable, whose markers may lie past it; txns applies them
	// to the rewrite, from the log start (cleantxn.go).
	abortedTxns []AbortedTxn
	txns        *txnCleaner
}

// Clean runs one cleaning pass over the log with the caller's map (reset
// first) and throttle (nil: no limit), below highWatermark (CleanState).
// A log that is not compacted or has nothing dirty returns a zero result.
func (l *Log) Clean(ctx context.Context, m *OffsetMap, th *Throttle, highWatermark int64) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	start := time.Now()
	plan, err := l.planClean(highWatermark)
	if err != nil || plan == nil {
		return CleanResult{}, err
	}
	res := CleanResult{FirstDirty: plan.firstDirty}

	m.Reset()
	end, read, err := l.buildOffsetMap(ctx, plan, m, th)
	res.BytesRead += read
	if errors.Is(err, errCleanRaced) {
		l.logger.Info("segments changed while cleaned; retrying next pass")
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.End = end
	for _, g := range groupForCleaning(plan, end) {
		gr, err := l.cleanGroup(ctx, plan, g, m, end, th)
		res.BytesRead += gr.read
		res.BytesWritten += gr.written
		res.RecordsDropped += gr.dropped
		if errors.Is(err, errCleanRaced) {
			l.logger.Info("segments changed while cleaned; retrying next pass", "base", plan.segs[g.from].base)
			return res, nil // the checkpoint stays: the next pass redoes it
		}
		if err != nil {
			return res, err
		}
		res.SegmentsBefore += g.to - g.from
		res.SegmentsAfter++
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return res, ErrClosed
	}
	if err := l.persistCleanerCheckpoint(end); err != nil {
		return res, err
	}
	l.firstDirty = end
	l.logger.Info("cleaned log", "first_dirty", res.FirstDirty, "end", end, "bytes_read", res.BytesRead,
		"bytes_written", res.BytesWritten, "segments_before", res.SegmentsBefore, "segments_after", res.SegmentsAfter,
		"records_dropped", res.RecordsDropped, "duration", time.Since(start).Round(time.Millisecond))
	return res, nil
}

// planClean lists the sealed segments below the first uncleanable offset;
// nil when there is nothing to do.
func (l *Log) planClean(highWatermark int64) (*cleanPlan, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil, ErrClosed
	}
	nowMs := l.now().UnixMilli()
	st := l.cleanStateLocked(nowMs, highWatermark)
	if !st.Compact || st.DirtyBytes == 0 {
		return nil, nil
	}
	p := &cleanPlan{firstDirty: st.FirstDirty, firstUncleanable: st.FirstUncleanable, cfg: l.cfg, nowMs: nowMs,
		producerLast: make(map[int64]int64, l.producers.Len())}
	l.producers.Each(func(pr producers.Producer) {
		if n := len(pr.Batches); n > 0 {
			p.producerLast[pr.ID] = pr.Batches[n-1].LastOffset
		}
	})
	for _, s := range l.segs[:len(l.segs)-1] {
		if s.base >= st.FirstUncleanable {
			break
		}
		p.segs = append(p.segs, s)
		p.sizes, p.nexts = append(p.sizes, s.size), append(p.nexts, s.next)
		p.newest = append(p.newest, l.newestMs(s))
	}
	for _, s := range l.segs {
		for _, a := range s.aborted {
			if a.FirstOffset < st.FirstUncleanable {
				p.abortedTxns = append(p.abortedTxns, a)
			}
		}
	}
	p.txns = newTxnCleaner(p.abortedTxns, p.segs[0].base)
	return p, nil
}

// buildOffsetMap reads the dirty section into m and returns the offset the
// map covers up to (exclusive) and the bytes read.
func (l *Log) buildOffsetMap(ctx context.Context, p *cleanPlan, m *OffsetMap, th *Throttle) (end int64, read int64, err error) {
	end = p.firstDirty
	txns := newTxnCleaner(p.abortedTxns, p.firstDirty)
	for i, s := range p.segs {
		if p.nexts[i] <= p.firstDirty {
			continue
		}
		full := false
		n, err := l.eachBatch(s, p.sizes[i], func(h *batch.Header, raw []byte) (bool, error) {
			if h.LastOffset() < p.firstDirty {
				return true, nil
			}
			filled, at, err := mapBatch(h, raw, txns, m, p.firstDirty)
			if err != nil {
				return false, &CorruptionError{Segment: s.logPath(), Offset: h.BaseOffset, Err: err}
			}
			if filled {
				full, end = true, at
				return false, nil
			}
			end = h.NextOffset()
			return true, nil
		})
		read += n
		if err != nil {
			return end, read, err
		}
		if err := th.Wait(ctx, n); err != nil {
			return end, read, err
		}
		if full {
			break
		}
		end = max(end, min(p.nexts[i], p.firstUncleanable))
	}
	if end <= p.firstDirty {
		return end, read, fmt.Errorf("%w: %d keys", ErrOffsetMapTooSmall, m.Capacity())
	}
	return end, read, nil
}

// mapBatch puts the keys of one batch's records at or past from into m,
// the map pass's rule for a batch (buildOffsetMap, and the remote seam's
// BatchCleaner.Map): aborted data stays out of the map, so that it never
// shadows a committed value; markers hold no key, and are read only to
// end their transaction in txns (whether one may go is the rewrite's
// decision, with its own txnCleaner); a batch past the decompression
// bound stays out (filterBatch keeps it whole). It reports whether the
// map filled, and at which offset; err is a batch that cannot be read.
func mapBatch(h *batch.Header, raw []byte, txns *txnCleaner, m *OffsetMap, from int64) (full bool, at int64, err error) {
	if h.IsControl() {
		txns.markerRemovable(h, raw)
		return false, 0, nil
	}
	if txns.abortedData(h) {
		return false, 0, nil
	}
	_, recs, err := batch.Records(raw, cleanMaxDecompressed)
	if errors.Is(err, batch.ErrDecompressLimit) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	for _, r := range recs {
		off := h.BaseOffset + int64(r.OffsetDelta)
		if off < from || r.Key == nil {
			continue
		}
		if !m.Put(r.Key, off) {
			return true, off, nil
		}
	}
	return false, 0, nil
}

// eachBatch walks a segment's batches up to size, verifying CRCs, until
// fn returns false; it returns the bytes walked. raw is valid only during
// the call. The file is pinned for the walk; a segment that is no longer
// the log's, or no longer size bytes long, gives errCleanRaced.
func (l *Log) eachBatch(s *segment, size int64, fn func(h *batch.Header, raw []byte) (bool, error)) (n int64, err error) {
	l.mu.RLock()
	f, err := s.acquire()
	l.mu.RUnlock()
	if errors.Is(err, errRetired) {
		return 0, errCleanRaced
	}
	if err != nil {
		return 0, storageErr("clean", s.logPath(), err)
	}
	defer s.release()
	defer func() {
		if err != nil && !errors.Is(err, errCleanRaced) && l.segmentChanged(s, size) {
			err = errCleanRaced // a truncation cut it under the walk
		}
	}()
	w := &window{f: f, end: size, chunk: scanChunk, reuse: true}
	for pos := int64(0); pos < size; {
		h, err := w.batchAt(pos, true)
		if err != nil {
			if isDataError(err) {
				err = &CorruptionError{Segment: s.logPath(), Offset: -1, Err: err}
			}
			return pos, storageErr("clean", s.logPath(), err)
		}
		raw, err := w.get(pos, h.Size())
		if err != nil {
			return pos, storageErr("clean", s.logPath(), err)
		}
		pos += int64(h.Size())
		more, err := fn(&h, raw)
		if err != nil || !more {
			return pos, err
		}
	}
	return size, nil
}

// segmentChanged reports whether s left the log or changed size.
func (l *Log) segmentChanged(s *segment, size int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, t := range l.segs {
		if t == s {
			return t.size != size
		}
	}
	return true
}

// persistCleanerCheckpoint records the first dirty offset.
func (l *Log) persistCleanerCheckpoint(off int64) error {
	p := filepath.Join(l.dir, cleanerCheckpointName)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, p, encodeFrame(magicCleaner, binary.BigEndian.AppendUint64(nil, uint64(off)))); err != nil {
		return storageErr("write cleaner checkpoint", p, err)
	}
	return nil
}

// lowerCleanerCheckpointLocked moves the checkpoint down to end when the
// log was cut below it (a truncation, a torn tail dropped by recovery), as
// Kafka's cleaner manager does: records appended there later are dirty.
// A failure to persist it is logged; the next pass rewrites the file.
func (l *Log) lowerCleanerCheckpointLocked(end int64) {
	if l.firstDirty <= end {
		return
	}
	l.firstDirty = end
	if err := l.persistCleanerCheckpoint(end); err != nil {
		l.logger.Warn("cannot lower the cleaner checkpoint", "offset", end, "err", err)
	}
}

// loadCleanerCheckpoint returns the first dirty offset, 0 when none was
// written or the file is bad (the whole log is then dirty, which costs a
// pass and loses nothing).
func (l *Log) loadCleanerCheckpoint() (int64, error) {
	p := filepath.Join(l.dir, cleanerCheckpointName)
	b, err := vfs.ReadFile(l.fs, p, maxStateFile)
	if errors.Is(err, iofs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, storageErr("read cleaner checkpoint", p, err)
	}
	payload, err := decodeFrame(magicCleaner, b)
	if err == nil && len(payload) != 8 {
		err = fmt.Errorf("%w: %d-byte payload", errBadStateFile, len(payload))
	}
	if err != nil {
		l.logger.Warn("ignoring bad cleaner checkpoint", "path", p, "err", err)
		return 0, nil
	}
	return int64(binary.BigEndian.Uint64(payload)), nil
}

// Throttle bounds the cleaner's I/O to a rate shared by every log it
// cleans (--log-cleaner-io-max-bytes-per-second). A nil Throttle does not
// limit. Safe for one goroutine (the agent's cleaner).
type Throttle struct {
	rate  float64 // bytes per second
	start time.Time
	bytes float64 // since start
}

// NewThrottle limits to bytesPerSecond; <= 0 gives nil, no limit.
func NewThrottle(bytesPerSecond float64) *Throttle {
	if bytesPerSecond <= 0 {
		return nil
	}
	return &Throttle{rate: bytesPerSecond}
}

// throttleWindow: the rate is measured over windows of this length, so a
// pause long ago does not allow a burst now.
const throttleWindow = time.Second

// Wait accounts n bytes and sleeps until they fit the rate, or ctx ends.
func (t *Throttle) Wait(ctx context.Context, n int64) error {
	if t == nil {
		return ctx.Err()
	}
	now := time.Now()
	if now.Sub(t.start) > throttleWindow {
		t.start, t.bytes = now, 0
	}
	t.bytes += float64(n)
	due := t.start.Add(time.Duration(t.bytes / t.rate * float64(time.Second)))
	d := due.Sub(now)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
