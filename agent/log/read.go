package log

import (
	"errors"
	"fmt"
	"sort"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// maxReadAttempts bounds retries of a read that raced a truncation.
const maxReadAttempts = 3

// errReadRace is a read that kept racing truncations.
var errReadRace = errors.New("log: read raced truncation")

// Read returns whole batches, starting with the one that contains offset,
// from a single segment: none at or after maxOffset (exclusive; the caller's
// high watermark), at most maxBytes in total unless minOne is set and the
// first batch alone is larger (then exactly that batch, KIP-74). An offset
// equal to the log end or to maxOffset gives (nil, nil); one below the log
// start or above the end gives ErrOffsetOutOfRange. The slice is new and
// owned by the caller. Reads run concurrently with appends: the lock is held
// only to pick positions, and the I/O happens outside it.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64, minOne bool) ([]byte, error) {
	for range maxReadAttempts {
		out, raced, err := l.readOnce(offset, maxBytes, maxOffset, minOne)
		if !raced {
			return out, err
		}
	}
	return nil, &StorageError{Op: "read", Path: l.dir, Err: errReadRace}
}

// segmentForLocked returns the segment holding offset (which is >= the
// first segment's base).
func (l *Log) segmentForLocked(offset int64) *segment { return l.segs[l.segmentIndexLocked(offset)] }

func (l *Log) segmentIndexLocked(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

func (l *Log) readOnce(offset int64, maxBytes int, maxOffset int64, minOne bool) (out []byte, raced bool, err error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, false, ErrClosed
	}
	leo := l.leoLocked()
	if offset < l.lso || offset > leo {
		lso := l.lso
		l.mu.RUnlock()
		return nil, false, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, lso, leo)
	}
	maxOffset = min(maxOffset, leo)
	if offset >= maxOffset || maxBytes <= 0 && !minOne {
		l.mu.RUnlock()
		return nil, false, nil
	}
	i := l.segmentIndexLocked(offset)
	// An offset in a gap that the cleaner left after a segment's last
	// batch is served from the next segment's first batch.
	for offset >= l.segs[i].next && i < len(l.segs)-1 {
		i++
		offset = max(offset, l.segs[i].base)
	}
	seg := l.segs[i]
	start := int64(seg.idx.floor(uint32(offset - seg.base)).pos)
	end := seg.size
	if maxOffset < seg.next {
		if e, ok := seg.idx.ceil(uint32(maxOffset - seg.base)); ok {
			end = int64(e.pos)
		}
	}
	gen, interval := l.gen, l.cfg.IndexIntervalBytes
	f, err := seg.acquire()
	l.mu.RUnlock()
	if err != nil {
		return nil, false, storageErr("read", seg.logPath(), err)
	}
	defer seg.release()

	chunk := max(int64(maxBytes)+int64(interval)+batch.HeaderSize, scanChunk/16)
	w := &window{f: f, end: end, chunk: int(min(chunk, end-start, 1<<30))}
	first, n, err := collect(w, start, end, offset, maxOffset, maxBytes, minOne)
	if err == nil && n > 0 {
		out, err = w.get(first, n)
		out = out[:n:n]
	}
	l.mu.RLock()
	raced = l.gen != gen
	l.mu.RUnlock()
	if raced {
		return nil, true, nil
	}
	if err != nil {
		if isDataError(err) {
			err = &CorruptionError{Segment: seg.logPath(), Offset: offset, Err: err}
		}
		return nil, false, storageErr("read", seg.logPath(), err)
	}
	return out, false, nil
}

// collect walks headers from start (a batch boundary at or before offset)
// and returns the position and length of the batches to return.
func collect(w *window, start, end, offset, maxOffset int64, maxBytes int, minOne bool) (int64, int, error) {
	pos := start
	for pos < end {
		h, err := w.batchAt(pos, false)
		if err != nil {
			return 0, 0, err
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += int64(h.Size())
	}
	first, total := pos, 0
	for pos < end {
		h, err := w.batchAt(pos, false)
		if err != nil {
			return 0, 0, err
		}
		if h.LastOffset() >= maxOffset {
			break
		}
		if total+h.Size() > maxBytes && !(total == 0 && minOne) {
			break
		}
		total += h.Size()
		pos += int64(h.Size())
	}
	return first, total, nil
}

// FindByTimestamp returns the first batch whose MaxTimestamp >= ts and whose
// records are not all below the log start, or (nil, nil) if there is none
// (ListOffsets by timestamp; the caller finds the record inside).
func (l *Log) FindByTimestamp(ts int64) ([]byte, error) {
	from := int64(-1) // base of the next segment to search
	for {
		l.mu.RLock()
		if l.closed {
			l.mu.RUnlock()
			return nil, ErrClosed
		}
		var seg *segment
		for _, s := range l.segs {
			if s.base > from && s.size > 0 && s.maxTs >= ts && s.next > l.lso {
				seg = s
				break
			}
		}
		if seg == nil {
			l.mu.RUnlock()
			return nil, nil
		}
		start := int64(0)
		if e, ok := seg.idx.timeBefore(ts); ok {
			start = int64(seg.idx.floor(e.rel).pos)
		}
		end, lso := seg.size, l.lso
		f, err := seg.acquire()
		l.mu.RUnlock()
		if err != nil {
			return nil, storageErr("read", seg.logPath(), err)
		}

		raw, err := findInSegment(f, seg, start, end, func(h *batch.Header) bool {
			return h.MaxTimestamp >= ts && h.LastOffset() >= lso
		})
		seg.release()
		if raw != nil || err != nil {
			return raw, err
		}
		from = seg.base
	}
}

// MaxTimestampBatch returns the first batch carrying the largest
// MaxTimestamp in the local log (nil when the log is empty).
func (l *Log) MaxTimestampBatch() ([]byte, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return nil, ErrClosed
	}
	var seg *segment
	for _, s := range l.segs {
		if s.size > 0 && (seg == nil || s.maxTs > seg.maxTs) {
			seg = s
		}
	}
	if seg == nil {
		l.mu.RUnlock()
		return nil, nil
	}
	target := seg.base + int64(seg.maxTsRel)
	start, end := int64(seg.idx.floor(seg.maxTsRel).pos), seg.size
	f, err := seg.acquire()
	l.mu.RUnlock()
	if err != nil {
		return nil, storageErr("read", seg.logPath(), err)
	}
	defer seg.release()
	return findInSegment(f, seg, start, end, func(h *batch.Header) bool { return h.BaseOffset >= target })
}

// findInSegment returns a copy of the first batch in [start, end) that
// match accepts, or nil. The caller holds seg's file f pinned.
func findInSegment(f vfs.File, seg *segment, start, end int64, match func(*batch.Header) bool) ([]byte, error) {
	w := &window{f: f, end: end, chunk: scanChunk / 16}
	for pos := start; pos < end; {
		h, err := w.batchAt(pos, false)
		if err != nil {
			if isDataError(err) {
				err = &CorruptionError{Segment: seg.logPath(), Offset: -1, Err: err}
			}
			return nil, storageErr("read", seg.logPath(), err)
		}
		if match(&h) {
			raw, err := w.get(pos, h.Size())
			if err != nil {
				return nil, storageErr("read", seg.logPath(), err)
			}
			return append([]byte(nil), raw...), nil
		}
		pos += int64(h.Size())
	}
	return nil, nil
}
