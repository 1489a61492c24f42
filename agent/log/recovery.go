package log

import (
	"errors"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// recover opens the segments and makes the log consistent (package
// comment, "Recovery"). It runs before the log is shared, so it holds no lock.
func (l *Log) recover() error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return storageErr("list", l.dir, err)
	}
	// A cleaning pass cut short leaves .cleaned or .swap files
	// (cleanswap.go); they are settled before the segments are listed.
	if changed, err := l.recoverCleaning(names); err != nil {
		return err
	} else if changed {
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return storageErr("list", l.dir, err)
		}
	}
	if l.firstDirty, err = l.loadCleanerCheckpoint(); err != nil {
		return err
	}
	clean := false
	var bases []int64
	logs := map[int64]bool{}
	for _, n := range names {
		if b, ok := parseBase(n, logSuffix); ok {
			logs[b] = true
			bases = append(bases, b)
		}
	}
	for _, n := range names {
		p := filepath.Join(l.dir, n)
		switch {
		case n == cleanFileName:
			b, err := vfs.ReadFile(l.fs, p, maxStateFile)
			if err == nil {
				_, err = decodeFrame(magicClean, b)
			}
			clean = err == nil
		case strings.HasSuffix(n, ".tmp"):
			_ = l.fs.Remove(p) // an interrupted atomic write
		default:
			for _, suffix := range segmentSuffixes[1:] {
				if b, ok := parseBase(n, suffix); ok && !logs[b] {
					_ = l.fs.Remove(p)
				}
			}
		}
	}
	slices.Sort(bases)

	epochs, epochsOK, err := l.loadEpochs()
	if err != nil {
		return err
	}
	lso, err := l.loadStart()
	if err != nil {
		return err
	}
	l.epochs = epochs
	onBatch := func(h *batch.Header) { l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) }
	if !epochsOK {
		onBatch = nil // rebuilt from every segment below
	}

	interval := l.cfg.IndexIntervalBytes
	for i, base := range bases {
		last := i == len(bases)-1
		// A segment may start past the previous one's end: the cleaner
		// leaves gaps where it dropped a group's last batches.
		if n := len(l.segs); n > 0 && l.segs[n-1].next > base {
			l.cutTail(bases[i:], "segment starts before the previous segment's end", l.segs[n-1].next)
			break
		}
		seg, err := openSegment(l.files, l.fs, l.dir, base, false)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, seg)
		var size int64
		if err := seg.withFile("stat", func(f vfs.File) error {
			st, err := f.Stat()
			if err == nil {
				size = st.Size()
			}
			return err
		}); err != nil {
			return storageErr("stat", seg.logPath(), err)
		}
		// Sealed segments were fsynced with their indexes before the next
		// segment got data, so they need only the cheap check; the active
		// one is scanned whole unless the last shutdown was clean.
		ok := false
		if clean || !last {
			if ok, err = seg.loadIndexes(size, interval); err != nil {
				return err
			}
		}
		if ok {
			if err := l.loadTxnIndexLocked(seg); err != nil {
				return err
			}
			continue
		}
		end, serr := seg.rebuild(size, true, interval, onBatch)
		if serr != nil && !isDataError(serr) {
			return storageErr("recover", seg.logPath(), serr)
		}
		if end < size {
			if err := seg.withFile("recover", func(f vfs.File) error { return l.cutSegmentTail(f, seg, end, size, serr) }); err != nil {
				return storageErr("recover", seg.logPath(), err)
			}
		}
		if err := l.loadTxnIndexLocked(seg); err != nil {
			return err
		}
		if !last {
			if err := seg.writeIndexes(); err != nil {
				return err
			}
			if end < size {
				l.cutTail(bases[i+1:], "a corrupt batch ended the log in an earlier segment", seg.next)
				break
			}
		}
	}
	if len(l.segs) == 0 {
		seg, err := openSegment(l.files, l.fs, l.dir, lso, true)
		if err != nil {
			return err
		}
		l.segs = []*segment{seg}
	}
	leo := l.leoLocked()
	l.lowerCleanerCheckpointLocked(leo)
	if !clean {
		if err := l.active().withFile("recover", func(f vfs.File) error { return f.Sync() }); err != nil {
			return storageErr("recover", l.active().logPath(), err)
		}
	}

	if !epochsOK {
		l.epochs = epochCache{}
		if err := l.walkLocked(l.segs[0].base, leo, func(h *batch.Header, _ batch.Marker) {
			l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		}); err != nil {
			return err
		}
	}
	l.epochs.truncateFromEnd(leo)

	// The start never passes the end (a start persisted past data that a
	// crash then lost), nor stays below the first segment.
	newLSO := min(max(lso, l.segs[0].base), leo)
	l.lso = newLSO
	l.epochs.truncateFromStart(newLSO)
	if !epochsOK || !slices.Equal(l.epochs.entries, epochs.entries) {
		if err := l.persistEpochs(&l.epochs); err != nil {
			return err
		}
	}
	if newLSO != lso {
		if err := l.persistStart(newLSO); err != nil {
			return err
		}
	}

	l.pruneSnapshotsLocked(func(off int64) bool { return off <= leo })
	if err := l.loadProducersLocked(leo); err != nil {
		return err
	}
	if err := l.fs.Remove(filepath.Join(l.dir, cleanFileName)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return storageErr("remove clean mark", cleanFileName, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return storageErr("recover", l.dir, err)
	}
	l.flushed = leo
	l.logger.Info("opened log", "clean", clean, "segments", len(l.segs), "start", l.lso, "end", leo)
	return nil
}

// cutSegmentTail cuts seg's file f (pinned by the caller) back from size
// to end, where recovery found the last good batch ending (serr says why).
func (l *Log) cutSegmentTail(f vfs.File, seg *segment, end, size int64, serr error) error {
	if zeroTail(f, end, size) {
		l.logger.Info("dropping preallocated zeros after the last batch", "segment", seg.logPath(), "offset", seg.next, "position", end, "bytes_cut", size-end)
	} else {
		cerr := &CorruptionError{Segment: seg.logPath(), Offset: seg.next, Err: serr}
		l.logger.Warn("truncating torn or corrupt segment tail", "segment", seg.logPath(), "offset", seg.next, "position", end, "bytes_cut", size-end, "err", cerr)
	}
	if err := f.Truncate(end); err != nil {
		return err
	}
	return f.Sync()
}

// zeroTail reports whether f holds only zeros from end up to size, as
// preallocation leaves it (checked up to a piece's length: a torn write
// shows in its first bytes).
func zeroTail(f vfs.File, end, size int64) bool {
	buf := make([]byte, min(size-end, preallocPiece))
	if _, err := f.ReadAt(buf, end); err != nil {
		return false
	}
	for _, b := range buf {
		if b != 0 {
			return false
		}
	}
	return true
}

// cutTail deletes the segments with the given bases: recovery found that
// the log ends before them.
func (l *Log) cutTail(bases []int64, why string, end int64) {
	for _, b := range bases {
		s := &segment{fs: l.fs, dir: l.dir, base: b}
		l.logger.Warn("deleting segment after end of log", "segment", s.logPath(), "log_end", end, "reason", why)
		for _, suffix := range segmentSuffixes {
			if err := l.fs.Remove(s.path(suffix)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				l.logger.Error("cannot delete segment file", "path", s.path(suffix), "err", err)
			}
		}
	}
}
