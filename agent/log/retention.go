package log

import (
	"fmt"

	"github.com/strata-streaming/strata/internal/vfs"
)

// DeleteRecordsBefore raises the log start offset to offset (DeleteRecords;
// the caller checks offset <= high watermark) and deletes the sealed
// segments wholly below it. The new start is persisted before anything is
// deleted, so it survives a restart. The active segment is never deleted
// here, as in Kafka: reads below the start offset fail even inside it.
func (l *Log) DeleteRecordsBefore(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitSwapLocked()
	if l.closed {
		return ErrClosed
	}
	if leo := l.leoLocked(); offset > leo || offset < 0 {
		return fmt.Errorf("%w: delete before %d, log end %d", ErrOffsetOutOfRange, offset, leo)
	}
	if offset <= l.lso {
		return nil
	}
	if err := l.setStartLocked(offset); err != nil {
		return err
	}
	_, err := l.deleteSegmentsLocked("delete-records", func(s, next *segment) bool {
		return next != nil && next.base <= l.lso
	})
	return err
}

// ApplyRetention deletes segments by retention.ms (every batch in the
// segment is older than now - retention.ms; a segment without timestamps
// uses its file's modification time) and then by retention.bytes (oldest
// first while the rest stays at or above the limit). With Config.Remote the
// limits are local.retention.* and only segments wholly below the remote
// end are deleted, so a segment's last copy never goes. As Kafka does, this may
// include the active segment: it is then rolled first, so the log ends up
// empty with its start at the end. Nothing here knows about replication:
// callers that must keep unreplicated data (Kafka keeps data above the high
// watermark) must not call it before the high watermark reaches the log end,
// or should wait for a predicate-taking variant (deleteSegmentsLocked).
func (l *Log) ApplyRetention() (deletedSegments int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitSwapLocked()
	if l.closed {
		return 0, ErrClosed
	}
	nowMs := l.now().UnixMilli()
	retMs, retBytes := l.cfg.RetentionMs.Milliseconds(), l.cfg.RetentionBytes
	byTime := l.cfg.RetentionMs >= 0
	if l.cfg.Remote {
		retMs, retBytes = l.cfg.LocalRetentionMs.Milliseconds(), l.cfg.LocalRetentionBytes
		byTime = l.cfg.LocalRetentionMs >= 0
	}
	if !l.cfg.Delete && !l.cfg.Remote {
		// cleanup.policy=compact: the cleaner, not age or size, bounds the log.
		byTime, retBytes = false, -1
	}
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	excess := total - retBytes
	deletable := func(s, next *segment) bool {
		if s.size == 0 && next == nil {
			return false // the active segment, just rolled: nothing to delete
		}
		if l.cfg.Remote && (next == nil || next.base > l.remoteEnd) {
			// Not yet wholly in the manifest: the only copy. A segment
			// counts as up to the next one's base (SealedSegments), so
			// that the log start never passes the bucket's end over
			// offsets the cleaner emptied.
			return false
		}
		if byTime {
			// An emptied segment (the cleaner's) holds nothing to keep, and
			// its file's time is the cleaning's: it must not stop the walk.
			if s.size == 0 || nowMs-l.newestMs(s) > retMs {
				excess -= s.size
				return true
			}
			byTime = false // time retention stops at the first young segment
		}
		if retBytes >= 0 && excess-s.size >= 0 {
			excess -= s.size
			return true
		}
		return false
	}
	n, err := l.deleteSegmentsLocked("retention", deletable)
	l.producers.Expire(nowMs, l.cfg.ProducerIDExpiration.Milliseconds())
	return n, err
}

// newestMs is the newest timestamp in s, or its file's mtime without any.
func (l *Log) newestMs(s *segment) int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	if st, err := s.fs.Stat(s.logPath()); err == nil {
		// By name: no need to open an idle segment for its mtime.
		return st.ModTime().UnixMilli()
	}
	return l.now().UnixMilli() // unknown age: keep it
}

// deleteSegmentsLocked is the one place segments are deleted (retention and
// DeleteRecords; later tiering gates it on upload). It walks from the oldest
// segment and deletes while deletable(segment, next segment or nil) holds.
// If the active segment qualifies it is rolled first, so a log always has an
// active segment. The log start moves to the first remaining segment's base
// if that is higher, and state below it (epochs, snapshots) is dropped.
func (l *Log) deleteSegmentsLocked(reason string, deletable func(s, next *segment) bool) (int, error) {
	k := 0
	for k < len(l.segs) {
		var next *segment
		if k+1 < len(l.segs) {
			next = l.segs[k+1]
		}
		if !deletable(l.segs[k], next) {
			break
		}
		k++
	}
	if k == 0 {
		return 0, nil
	}
	if k == len(l.segs) {
		if err := l.rollLocked(); err != nil {
			return 0, err
		}
	}
	newStart := max(l.lso, l.segs[k].base)
	if newStart != l.lso {
		if err := l.setStartLocked(newStart); err != nil {
			return 0, err
		}
	}
	var firstErr error
	for _, s := range l.segs[:k] {
		l.logger.Info("deleting segment", "reason", reason, "base", s.base, "next", s.next, "bytes", s.size)
		if err := s.remove(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	l.segs = append(l.segs[:0:0], l.segs[k:]...)
	if err := l.fs.SyncDir(l.dir); err != nil && firstErr == nil {
		firstErr = storageErr("delete segments", l.dir, err)
	}
	base := l.segs[0].base
	l.pruneSnapshotsLocked(func(off int64) bool { return off >= base })
	return k, firstErr
}

// setStartLocked persists a new log start and trims the epoch cache.
func (l *Log) setStartLocked(lso int64) error {
	if err := l.persistStart(lso); err != nil {
		return err
	}
	l.lso = lso
	next := epochCache{entries: append([]epochEntry(nil), l.epochs.entries...)}
	if next.truncateFromStart(lso) {
		if err := l.persistEpochs(&next); err != nil {
			return err
		}
		l.epochs = next
	}
	return nil
}

// TruncateTo drops every batch at or after offset (a follower's divergence
// repair). Like Kafka it cuts at the start of the batch that contains
// offset, so the new log end may be below offset. An offset at or below the
// first segment's base empties the log and restarts it at offset.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitSwapLocked()
	if l.closed {
		return ErrClosed
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	return l.truncateLocked(offset)
}

// truncateLocked cuts the log at offset and rebuilds indexes, epochs and
// producer state to match; it bumps the generation so that appends waiting
// for an fsync learn that their bytes are gone.
func (l *Log) truncateLocked(offset int64) error {
	if offset >= l.leoLocked() {
		return nil
	}
	var newEnd int64
	if offset < l.segs[0].base {
		// The new segment has another name, so it exists before the old
		// ones go and the log is never without a segment.
		seg, err := openSegment(l.files, l.fs, l.dir, offset, true)
		if err != nil {
			return err
		}
		old := l.segs
		l.segs = []*segment{seg}
		for _, s := range old {
			if err := s.remove(); err != nil {
				return err
			}
		}
		newEnd = offset
	} else {
		for len(l.segs) > 1 && l.active().base >= offset {
			if err := l.active().remove(); err != nil {
				return err
			}
			l.segs = l.segs[:len(l.segs)-1]
		}
		seg := l.active()
		pos, err := positionOf(seg, offset)
		if err != nil {
			return err
		}
		if err := seg.withFile("truncate", func(f vfs.File) error {
			if err := f.Truncate(pos); err != nil {
				return err
			}
			return f.Sync()
		}); err != nil {
			return storageErr("truncate", seg.logPath(), err)
		}
		if _, err := seg.rebuild(pos, false, l.cfg.IndexIntervalBytes, nil); err != nil {
			return storageErr("truncate", seg.logPath(), err)
		}
		newEnd = seg.next
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return storageErr("truncate", l.dir, err)
	}
	l.gen++
	l.truncs = append(l.truncs, truncation{gen: l.gen, point: newEnd})
	if len(l.truncs) > maxTruncationHistory {
		l.truncs = l.truncs[1:]
	}
	l.flushed = min(l.flushed, newEnd)
	l.lowerCleanerCheckpointLocked(newEnd)
	l.logger.Info("truncated log", "offset", offset, "end", newEnd)
	if newEnd < l.lso || l.segs[0].base > l.lso {
		if err := l.setStartLocked(newEnd); err != nil {
			return err
		}
	}
	next := epochCache{entries: append([]epochEntry(nil), l.epochs.entries...)}
	if next.truncateFromEnd(newEnd) {
		if err := l.persistEpochs(&next); err != nil {
			return err
		}
		l.epochs = next
	}
	l.pruneSnapshotsLocked(func(off int64) bool { return off <= newEnd })
	return l.loadProducersLocked(newEnd)
}

// positionOf finds the file position of the batch containing offset (or
// the segment end if no batch holds it).
func positionOf(seg *segment, offset int64) (int64, error) {
	f, err := seg.acquire()
	if err != nil {
		return 0, storageErr("truncate", seg.logPath(), err)
	}
	defer seg.release()
	pos := int64(seg.idx.floor(uint32(offset - seg.base)).pos)
	w := &window{f: f, end: seg.size, chunk: scanChunk / 16}
	for pos < seg.size {
		h, err := w.batchAt(pos, false)
		if err != nil {
			return 0, storageErr("truncate", seg.logPath(), err)
		}
		if h.LastOffset() >= offset {
			return pos, nil
		}
		pos += int64(h.Size())
	}
	return pos, nil
}
