package log

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// A group of sealed segments is cleaned into one new segment named after
// the group's first base, and swapped in so that a crash at any point
// leaves either the old segments or the new one, never a mix:
//
//  1. write <base>.log.cleaned, fsync it and the directory;
//  2. rename it to <base>.<end>.swap and fsync the directory: the commit
//     point. <end> is the base of the segment after the group, so the
//     swap names exactly the old segments it replaces, [base, end);
//  3. delete the old segments' .log, .index and .timeindex files;
//  4. rename the swap to <base>.log and fsync the directory;
//  5. write the new segment's indexes (derived data: recovery rebuilds
//     them if they are missing). Its aborted-transaction index (the
//     entries the pass kept, cleantxn.go), which recovery rebuilds only
//     when told to, is written between 3 and 4.
//
// Recovery (recoverCleaning, called first by Open) deletes every
// .log.cleaned file (a pass that had not committed) and completes every
// .swap file with steps 3 and 4, which are idempotent, and then has
// producer state and transaction indexes replayed from the log start.

// cleanGroupRange is plan.segs[from:to].
type cleanGroupRange struct{ from, to int }

// groupForCleaning splits the plan's segments below end into runs whose
// total size stays within segment.bytes and whose offsets fit the index's
// 32-bit relative offsets (Kafka's groupSegmentsBySize).
func groupForCleaning(p *cleanPlan, end int64) []cleanGroupRange {
	var out []cleanGroupRange
	for i := 0; i < len(p.segs) && p.segs[i].base < end; {
		j, size := i+1, p.sizes[i]
		for j < len(p.segs) && p.segs[j].base < end && size+p.sizes[j] <= p.cfg.SegmentBytes &&
			p.nexts[j]-p.segs[i].base <= math.MaxInt32 {
			size += p.sizes[j]
			j++
		}
		out = append(out, cleanGroupRange{i, j})
		i = j
	}
	return out
}

type groupResult struct {
	read, written, dropped int64
}

// cleanGroup rewrites one group into a .cleaned file and swaps it in.
func (l *Log) cleanGroup(ctx context.Context, p *cleanPlan, g cleanGroupRange, m *OffsetMap, end int64, th *Throttle) (groupResult, error) {
	var gr groupResult
	base := p.segs[g.from].base
	cleanedPath := filepath.Join(l.dir, segmentName(base)+cleanedSuffix)
	// Written through its own descriptor, outside the FilePool: one file
	// for the length of one group, and never a segment until the swap,
	// which opens it through the pool.
	f, err := l.fs.OpenFile(cleanedPath, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return gr, storageErr("clean", cleanedPath, err)
	}
	ns := &segment{fs: l.fs, dir: l.dir, base: base}
	ns.reset()
	written, err := l.writeCleaned(ctx, p, g, m, end, th, f, ns, &gr)
	gr.written = written
	ns.aborted = p.txns.takeIndex()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		_ = l.fs.Remove(cleanedPath)
		if errors.Is(err, errCleanRaced) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return gr, err
		}
		return gr, storageErr("clean", cleanedPath, err)
	}
	return gr, l.swapCleaned(p, g, ns, cleanedPath)
}

// writeCleaned writes the group's surviving batches to f and tracks them
// in ns; it returns the bytes written.
func (l *Log) writeCleaned(ctx context.Context, p *cleanPlan, g cleanGroupRange, m *OffsetMap, end int64, th *Throttle,
	f vfs.File, ns *segment, gr *groupResult) (int64, error) {
	var pos int64
	buf := make([]byte, 0, 1<<20)
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if _, err := f.WriteAt(buf, pos-int64(len(buf))); err != nil {
			return err
		}
		n := int64(len(buf))
		buf = buf[:0]
		return th.Wait(ctx, n)
	}
	for i := g.from; i < g.to; i++ {
		s := p.segs[i]
		dropTombstones := p.nowMs-p.newest[i] > p.cfg.DeleteRetention.Milliseconds()
		n, err := l.eachBatch(s, p.sizes[i], func(h *batch.Header, raw []byte) (bool, error) {
			out, dropped, err := cleanBatch(h, raw, p, m, end, dropTombstones)
			if err != nil {
				return false, &CorruptionError{Segment: s.logPath(), Offset: h.BaseOffset, Err: err}
			}
			gr.dropped += dropped
			if out == nil {
				return true, nil
			}
			oh, err := batch.ParseHeader(out)
			if err != nil {
				return false, err
			}
			if !ns.fits(len(out), oh.LastOffset()) {
				return false, fmt.Errorf("%w: cleaned group of segment %d passes the index limits", ErrInvalidBatch, ns.base)
			}
			ns.track(&oh, pos, p.cfg.IndexIntervalBytes)
			buf = append(buf, out...)
			pos += int64(len(out))
			if len(buf) >= cap(buf)/2 {
				return true, flush()
			}
			return true, nil
		})
		gr.read += n
		if err != nil {
			return pos, err
		}
		if err := th.Wait(ctx, n); err != nil {
			return pos, err
		}
	}
	return pos, flush()
}

// filterBatch applies the cleaner's record rules to one batch: it returns
// the batch to write (raw itself if every record stays, a rebuilt or
// emptied batch otherwise, nil to drop it) and how many records were
// dropped. Control batches are returned whole; the caller has already
// removed aborted data (cleanBatch), so a transactional batch here is
// committed and compacted like any other.
func filterBatch(h *batch.Header, raw []byte, m *OffsetMap, end int64, dropTombstones bool, producerLast map[int64]int64) ([]byte, int64, error) {
	if h.IsControl() || h.BaseOffset >= end {
		return raw, 0, nil
	}
	_, recs, err := batch.Records(raw, cleanMaxDecompressed)
	if errors.Is(err, batch.ErrDecompressLimit) {
		return raw, 0, nil // left out of the map too (clean.go)
	}
	if err != nil {
		return nil, 0, err
	}
	kept := recs[:0:0]
	for _, r := range recs {
		if keepRecord(h.BaseOffset+int64(r.OffsetDelta), r, m, end, dropTombstones) {
			kept = append(kept, r)
		}
	}
	dropped := int64(len(recs) - len(kept))
	switch {
	case dropped == 0:
		return raw, 0, nil
	case len(kept) > 0:
		out, err := batch.BuildRetained(h, kept)
		return out, dropped, err
	case h.HasProducer():
		if last, ok := producerLast[h.ProducerID]; ok && last == h.LastOffset() {
			out, err := batch.Emptied(raw)
			return out, dropped, err
		}
	}
	return nil, dropped, nil
}

// keepRecord is the cleaner's rule for one record at offset off.
func keepRecord(off int64, r batch.Record, m *OffsetMap, end int64, dropTombstones bool) bool {
	if r.Key == nil {
		return false // a compacted topic refuses keyless records; Kafka's cleaner drops old ones
	}
	if off >= end {
		return true // beyond what the map saw
	}
	if latest, ok := m.Get(r.Key); ok && off < latest {
		return false // a newer record of the key exists
	}
	return r.Value != nil || !dropTombstones
}

// swapCleaned puts the cleaned file in place of the group's segments
// (steps 2 to 5 of the protocol above). Appends wait for mu, so only the
// renames, removals and the segment list's change hold it: the commit's
// directory fsync, the one after step 4 and the index writes run outside,
// with swapping set so that retention and truncation, which would change
// the segments being swapped, wait for them (waitSwapLocked).
func (l *Log) swapCleaned(p *cleanPlan, g cleanGroupRange, ns *segment, cleanedPath string) error {
	old := p.segs[g.from:g.to]
	l.mu.Lock()
	end, ok := l.groupInPlaceLocked(old)
	if !ok {
		l.mu.Unlock()
		_ = l.fs.Remove(cleanedPath)
		return errCleanRaced
	}
	l.swapping = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.swapping = false
		l.swapDone.Broadcast()
		l.mu.Unlock()
	}()

	swapPath := filepath.Join(l.dir, swapName(ns.base, end))
	if err := l.fs.Rename(cleanedPath, swapPath); err != nil {
		_ = l.fs.Remove(cleanedPath)
		return storageErr("clean", swapPath, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		// Not known to be committed: the log still reads the old files,
		// and recovery will finish the swap if the rename is durable.
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.failCleaningLocked(storageErr("clean", l.dir, err))
	}

	seg, offsets, times, err := l.installCleaned(old, ns, swapPath)
	if err != nil {
		return err
	}
	// Step 4 durable: a crash before this finds the swap file and
	// recovery completes it again, so nothing waited for it.
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.logger.Warn("cannot sync the directory after a cleaned segment's rename; recovery completes the swap", "dir", l.dir, "err", err)
	}
	if err := seg.writeIndexFiles(offsets, times); err != nil {
		l.logger.Warn("cannot write cleaned segment's indexes; recovery rebuilds them", "segment", seg.logPath(), "err", err)
	}
	return nil
}

// groupInPlaceLocked reports whether old are still consecutive segments
// of the open log with a segment after them, and that one's base: the end
// of the range a swap of old replaces.
func (l *Log) groupInPlaceLocked(old []*segment) (end int64, ok bool) {
	if l.closed || l.failed != nil {
		return 0, false
	}
	at := slices.Index(l.segs, old[0])
	if at < 0 || at+len(old) >= len(l.segs) {
		return 0, false
	}
	for k, s := range old {
		if l.segs[at+k] != s {
			return 0, false
		}
	}
	return l.segs[at+len(old)].base, true
}

// installCleaned does steps 3 and 4 of a committed swap under mu and puts
// the new segment in the log, returning it and its index files' contents.
func (l *Log) installCleaned(old []*segment, ns *segment, swapPath string) (*segment, []byte, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		// Committed: the next Open's recovery completes the swap.
		return nil, nil, nil, ErrClosed
	}
	if _, ok := l.groupInPlaceLocked(old); !ok {
		// Only a truncation after a failed fsync changes segments
		// without waiting for the swap. Not errCleanRaced, which a pass
		// takes for "retry later": the log now needs its recovery.
		return nil, nil, nil, l.failCleaningLocked(errors.New("log: the segments of a committed cleaning swap changed before it was installed"))
	}
	at := slices.Index(l.segs, old[0])
	for _, s := range old {
		if err := s.remove(); err != nil {
			return nil, nil, nil, l.failCleaningLocked(err)
		}
	}
	// The aborted-transaction index goes in before the segment's name:
	// a crash before the rename completes the swap in recovery, which
	// rebuilds the indexes; one after it finds the index in place.
	if err := ns.writeTxnIndex(); err != nil {
		return nil, nil, nil, l.failCleaningLocked(err)
	}
	logPath := filepath.Join(l.dir, segmentName(ns.base)+logSuffix)
	if err := l.fs.Rename(swapPath, logPath); err != nil {
		return nil, nil, nil, l.failCleaningLocked(storageErr("clean", swapPath, err))
	}
	seg, err := openSegment(l.files, l.fs, l.dir, ns.base, false)
	if err != nil {
		return nil, nil, nil, l.failCleaningLocked(err)
	}
	seg.size, seg.next, seg.idx, seg.sinceIndex = ns.size, ns.next, ns.idx, ns.sinceIndex
	seg.maxTs, seg.maxTsRel, seg.firstTs, seg.aborted = ns.maxTs, ns.maxTsRel, ns.firstTs, ns.aborted
	segs := append(l.segs[:at:at], seg)
	l.segs = append(segs, l.segs[at+len(old):]...)
	offsets, times := seg.encodeIndexes()
	return seg, offsets, times, nil
}

// failCleaningLocked handles a failure after the swap was (maybe)
// committed: the log's view and its files may disagree, so it stops
// taking writes until it is reopened, whose recovery finishes the swap.
func (l *Log) failCleaningLocked(err error) error {
	l.failed = err
	l.logger.Error("cleaning swap failed; log refuses writes until reopened", "err", err)
	return err
}

func swapName(base, end int64) string { return segmentName(base) + "." + segmentName(end) + swapSuffix }

// parseSwap parses "<base>.<end>.swap".
func parseSwap(name string) (base, end int64, ok bool) {
	rest, ok := strings.CutSuffix(name, swapSuffix)
	if !ok || len(rest) != 41 || rest[20] != '.' {
		return 0, 0, false
	}
	b, err1 := strconv.ParseInt(rest[:20], 10, 64)
	e, err2 := strconv.ParseInt(rest[21:], 10, 64)
	if err1 != nil || err2 != nil || b < 0 || e <= b {
		return 0, 0, false
	}
	return b, e, true
}

// recoverCleaning runs before the segments are opened: it drops cleaned
// files that were never committed and completes committed swaps.
func (l *Log) recoverCleaning(names []string) (changed bool, err error) {
	for _, n := range names {
		p := filepath.Join(l.dir, n)
		if strings.HasSuffix(n, cleanedSuffix) {
			l.logger.Info("deleting uncommitted cleaned segment", "path", p)
			if err := l.fs.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return changed, storageErr("recover", p, err)
			}
			changed = true
			continue
		}
		base, end, ok := parseSwap(n)
		if !ok {
			continue
		}
		l.logger.Info("completing cleaned segment swap", "path", p, "base", base, "end", end)
		for _, old := range names {
			for _, suffix := range segmentSuffixes {
				if b, ok := parseBase(old, suffix); ok && b >= base && b < end {
					if err := l.fs.Remove(filepath.Join(l.dir, old)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
						return changed, storageErr("recover", old, err)
					}
				}
			}
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return changed, storageErr("recover", l.dir, err)
		}
		if err := l.fs.Rename(p, filepath.Join(l.dir, segmentName(base)+logSuffix)); err != nil {
			return changed, storageErr("recover", p, err)
		}
		changed = true
		l.replayAll = true // the new segment's transaction index is rebuilt

	}
	if changed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return changed, storageErr("recover", l.dir, err)
		}
	}
	return changed, nil
}
