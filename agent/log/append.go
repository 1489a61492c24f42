package log

import (
	"errors"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// Append writes one batch that the caller has already checked (CRC, magic,
// size) and waits until it is durable: Write, then Wait on what it returns.
func (l *Log) Append(b []byte, leaderEpoch int32) (AppendResult, error) {
	res, d, err := l.Write(b, leaderEpoch)
	if err != nil {
		return AppendResult{}, err
	}
	if err := d.Wait(); err != nil {
		return AppendResult{}, err
	}
	return res, nil
}

// Write appends one checked batch and returns without waiting for its
// fsync. It sets the batch's base offset and partition leader epoch in b in
// place and keeps no reference to b after it returns.
//
// Under the log's lock it checks idempotence, rolls the segment if needed,
// records a new leader epoch, and writes the bytes. A failed write is cut
// off again before the lock is released, so readers never see it.
// Writes land in the order of the calls, so a caller that writes a second
// batch before the first one's Wait (a connection's pipelined produces)
// has the two share one fsync.
func (l *Log) Write(b []byte, leaderEpoch int32) (AppendResult, Durable, error) {
	h, err := batch.ParseHeader(b)
	if err == nil && h.Size() != len(b) {
		err = fmt.Errorf("batch of %d bytes in a %d-byte buffer", h.Size(), len(b))
	}
	if err != nil {
		return AppendResult{}, Durable{}, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
	}

	l.mu.Lock()
	res, target, gen, err := l.appendLocked(b, &h, leaderEpoch)
	policy := l.cfg.Flush
	l.mu.Unlock()
	if err != nil {
		return AppendResult{}, Durable{}, err
	}
	return res, Durable{l: l, target: target, gen: gen, sync: policy == FlushAlways}, nil
}

// Durable is a written batch's claim on durability.
type Durable struct {
	l      *Log
	target int64
	gen    uint64
	sync   bool
}

// Wait returns once the batch is durable as log.flush asks: with always,
// after an fsync covering it, shared with concurrent writers (group
// commit); otherwise at once. A failed fsync rolls the log back to its last
// fsynced offset (the OS may already have dropped the unsynced pages),
// failing every Wait that needed it.
func (d Durable) Wait() error {
	if !d.sync {
		return nil
	}
	return d.l.syncTo(d.target, d.gen)
}

// appendLocked does the part of Append under l.mu; it returns the offset
// that must be durable before the append is acknowledged and the
// generation it was written in.
func (l *Log) appendLocked(b []byte, h *batch.Header, leaderEpoch int32) (AppendResult, int64, uint64, error) {
	switch {
	case l.closed:
		return AppendResult{}, 0, 0, ErrClosed
	case l.failed != nil:
		return AppendResult{}, 0, 0, &StorageError{Op: "append", Path: l.dir, Err: fmt.Errorf("%w: %w", ErrFailed, l.failed)}
	case int64(len(b)) > l.cfg.SegmentBytes:
		return AppendResult{}, 0, 0, fmt.Errorf("%w: %d bytes, segment.bytes %d", ErrBatchTooLarge, len(b), l.cfg.SegmentBytes)
	}
	m := batch.Marker{Type: -1}
	if h.IsControl() {
		var err error
		if m, err = batch.ParseMarker(b); err != nil {
			return AppendResult{}, 0, 0, fmt.Errorf("%w: %v", ErrInvalidBatch, err)
		}
	}
	dup, err := l.producers.Check(h, m)
	if err != nil {
		return AppendResult{}, 0, 0, err
	}
	if dup != nil {
		res := AppendResult{BaseOffset: dup.FirstOffset, LastOffset: dup.LastOffset, LogAppendTime: -1, LogStartOffset: l.lso, Duplicate: true}
		// The original may still be waiting for its fsync.
		return res, dup.LastOffset + 1, l.gen, nil
	}
	if l.shouldRoll(h, len(b)) {
		if err := l.rollLocked(); err != nil {
			return AppendResult{}, 0, 0, err
		}
	}
	base := l.leoLocked()
	if leaderEpoch > l.epochs.latest() {
		// Persisted before the data: a crash leaves at worst an epoch that
		// starts at the log end, which recovery drops.
		next := epochCache{entries: append(l.epochs.entries[:len(l.epochs.entries):len(l.epochs.entries)], epochEntry{epoch: leaderEpoch, start: base})}
		if err := l.persistEpochs(&next); err != nil {
			return AppendResult{}, 0, 0, err
		}
		l.epochs = next
	}
	batch.SetBaseOffset(b, base)
	batch.SetPartitionLeaderEpoch(b, leaderEpoch)
	h.BaseOffset, h.PartitionLeaderEpoch = base, leaderEpoch

	seg := l.active()
	pos := seg.size
	if err := l.writeLocked(seg, b); err != nil {
		return AppendResult{}, 0, 0, err
	}
	seg.track(h, pos, l.cfg.IndexIntervalBytes)
	l.preallocIfNeededLocked(seg)
	l.recordTxnLocked(l.producers.Update(h, m))
	l.appends.Add(1)
	l.bytes.Add(int64(len(b)))

	res := AppendResult{BaseOffset: base, LastOffset: h.LastOffset(), LogAppendTime: -1, LogStartOffset: l.lso}
	if h.Attributes&batch.AttrLogAppendTime != 0 {
		res.LogAppendTime = h.MaxTimestamp
	}
	return res, h.NextOffset(), l.gen, nil
}

// writeLocked writes b at the end of seg's data. An open that fails (the
// process is out of descriptors) writes nothing and leaves the log as it
// was, so the caller's retry may succeed; a write that fails is cut off.
func (l *Log) writeLocked(seg *segment, b []byte) error {
	pos := seg.size
	f, err := seg.acquire()
	if err != nil {
		return storageErr("append", seg.logPath(), err)
	}
	defer seg.release()
	if _, err := f.WriteAt(b, pos); err != nil {
		l.undoWriteLocked(seg, f, pos)
		return storageErr("append", seg.logPath(), err)
	}
	return nil
}

// undoWriteLocked cuts a failed (possibly partial) write off the segment,
// whose file f the caller holds pinned. If even that fails the log stops
// taking writes; reads go on, since they never look past seg.size.
func (l *Log) undoWriteLocked(seg *segment, f vfs.File, pos int64) {
	seg.fileEnd = 0 // the cut takes any preallocated zeros with it
	if err := f.Truncate(pos); err != nil {
		l.failed = storageErr("undo write", seg.logPath(), err)
		l.logger.Error("cannot cut failed write; log refuses writes", "segment", seg.logPath(), "position", pos, "err", err)
	}
}

// shouldRoll: the active segment is not empty and the batch would pass
// segment.bytes, segment.ms (by batch timestamps, as Kafka), or the 32-bit
// index limits.
func (l *Log) shouldRoll(h *batch.Header, n int) bool {
	a := l.active()
	if a.size == 0 {
		return false
	}
	if a.size+int64(n) > l.cfg.SegmentBytes {
		return true
	}
	if ms := l.cfg.SegmentMs.Milliseconds(); ms > 0 && a.firstTs >= 0 && h.MaxTimestamp-a.firstTs > ms {
		return true
	}
	return !a.fits(n, l.leoLocked()+int64(h.LastOffsetDelta))
}

// rollLocked seals the active segment and starts a new one at the log end.
// The old segment's data and indexes are fsynced before the new one exists.
func (l *Log) rollLocked() error {
	old := l.active()
	if err := l.trimLocked(old); err != nil {
		return err
	}
	f, err := old.acquire()
	if err != nil {
		return storageErr("roll", old.logPath(), err) // nothing written yet
	}
	start := time.Now()
	err = vfs.SyncData(f)
	old.release()
	if err != nil {
		l.syncFailedLocked(old, err)
		return storageErr("roll", old.logPath(), err)
	}
	l.countFsync(start)
	l.flushed = max(l.flushed, old.next)
	if err := old.writeIndexes(); err != nil {
		return err
	}
	base := old.next
	l.producers.Expire(l.now().UnixMilli(), l.cfg.ProducerIDExpiration.Milliseconds())
	if err := l.writeSnapshotLocked(base); err != nil {
		return err
	}
	seg, err := openSegment(l.files, l.fs, l.dir, base, true)
	if err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		seg.retire()
		return storageErr("roll", l.dir, err)
	}
	l.segs = append(l.segs, seg)
	l.wakePrealloc()
	l.logger.Debug("rolled segment", "base", base)
	return nil
}

// Roll seals the active segment if it holds anything, so that all of the
// log can be tiered: an agent that stops while it holds the only copy of
// a partition uploads it first.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.active().size == 0 {
		return nil
	}
	return l.rollLocked()
}

// Sync fsyncs everything appended so far.
func (l *Log) Sync() error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrClosed
	}
	target, gen := l.leoLocked(), l.gen
	l.mu.RUnlock()
	return l.syncTo(target, gen)
}

// syncTo returns once offsets below target (appended in generation gen)
// are durable. Callers queue on flushMu; whoever holds it fsyncs everything
// appended so far, so the callers behind it usually find their bytes already
// covered and return without an fsync of their own.
func (l *Log) syncTo(target int64, gen uint64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()

	l.mu.RLock()
	done, err := l.durableLocked(target, gen)
	if done || err != nil {
		l.mu.RUnlock()
		return err
	}
	seg := l.active()
	end, syncGen := seg.next, l.gen
	l.mu.RUnlock()

	// The Syncer opens the file only if it syncs it by itself. The
	// segment may be retired meanwhile (a truncation): its sync then
	// fails as a fileOpenError, and the generation check below reports
	// the truncation.
	start := time.Now()
	serr := l.syncer.sync(seg)
	var openErr *fileOpenError
	if errors.As(serr, &openErr) {
		// Nothing was lost: out of descriptors (the next sync retries), or
		// a truncation retired the segment, which durableLocked reports.
		l.mu.RLock()
		defer l.mu.RUnlock()
		done, err := l.durableLocked(target, gen)
		switch {
		case err != nil:
			return err
		case done:
			return nil
		}
		return openErr.err
	}
	l.countFsync(start)

	l.mu.Lock()
	defer l.mu.Unlock()
	if serr != nil {
		if l.gen == syncGen && !l.closed {
			l.syncFailedLocked(seg, serr)
		}
		return storageErr("sync", seg.logPath(), serr)
	}
	if l.gen == syncGen {
		l.flushed = max(l.flushed, end)
	}
	done, err = l.durableLocked(target, gen)
	if err == nil && !done {
		// Only a truncation in between can leave us short; report it as such.
		err = &StorageError{Op: "sync", Path: l.dir, Err: ErrTruncated}
	}
	return err
}

// durableLocked reports whether [.., target) of generation gen is fsynced,
// or an error if those bytes are gone or can no longer be made durable.
func (l *Log) durableLocked(target int64, gen uint64) (bool, error) {
	if l.lostLocked(target, gen) {
		return false, &StorageError{Op: "sync", Path: l.dir, Err: ErrTruncated}
	}
	if l.flushed >= target {
		return true, nil
	}
	if l.closed {
		return false, ErrClosed
	}
	if l.failed != nil {
		return false, &StorageError{Op: "sync", Path: l.dir, Err: fmt.Errorf("%w: %w", ErrFailed, l.failed)}
	}
	return false, nil
}

// lostLocked reports whether a truncation after generation gen cut below
// target.
func (l *Log) lostLocked(target int64, gen uint64) bool {
	if l.gen == gen {
		return false
	}
	if len(l.truncs) == 0 || l.truncs[0].gen > gen+1 {
		return true // history too short: assume the worst
	}
	for _, t := range l.truncs {
		if t.gen > gen && t.point < target {
			return true
		}
	}
	return false
}

// syncFailedLocked handles a failed fsync of seg. Linux may already have
// marked the unsynced pages clean and dropped them, so a later fsync's
// success would prove nothing: the log is cut back to its last fsynced
// offset and every append waiting on the failed fsync fails.
func (l *Log) syncFailedLocked(seg *segment, err error) {
	point := l.flushed
	l.logger.Error("fsync failed; cutting log back to last fsynced offset", "segment", seg.logPath(), "offset", point, "err", err)
	if terr := l.truncateLocked(point); terr != nil {
		l.failed = terr
		l.logger.Error("cannot cut log after failed fsync; log refuses writes", "err", terr)
	}
}
