package log

// What tiering (docs/design.md §7) needs of a partition log: the sealed segments
// to upload, a pinned view of one of them, the remote end that gates local
// deletion, and a restart at an offset for a partition restored from the
// bucket. The log knows nothing of buckets; the tiering package drives it.

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"

	"github.com/strata-streaming/strata/agent/log/producers"
	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/internal/vfs"
)

// SealedSegment describes a segment that takes no more appends.
type SealedSegment struct {
	// Base, Next: the segment covers offsets [Base, Next), Next being the
	// following segment's base. The cleaner can leave its last batch
	// ending below Next (and a segment with no batch at all): the offsets
	// between hold no record, and covering them keeps the bucket's
	// manifest, which takes segments end to end, free of holes.
	Base, Next   int64
	Size         int64 // bytes
	MaxTimestamp int64 // -1 when no batch carries one
	LeaderEpoch  int32 // the epoch at Next-1, -1 if unknown
}

// SealedSegments lists the sealed segments that end above from (Next >
// from), oldest first, including those the cleaner emptied. The active
// segment is never listed.
func (l *Log) SealedSegments(from int64) []SealedSegment {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return nil
	}
	var out []SealedSegment
	for i, s := range l.segs[:len(l.segs)-1] {
		if end := l.segs[i+1].base; end > from {
			out = append(out, l.sealedLocked(s, end))
		}
	}
	return out
}

// sealedLocked describes s, which the segment starting at end follows.
func (l *Log) sealedLocked(s *segment, end int64) SealedSegment {
	epoch := int32(-1)
	if e, ok := l.epochs.epochAt(end - 1); ok {
		epoch = e
	}
	return SealedSegment{Base: s.base, Next: end, Size: s.size, MaxTimestamp: s.maxTs, LeaderEpoch: epoch}
}

// SegmentView is a pinned sealed segment: its batches, its two indexes in
// Kafka's layout (index.go), its transaction index (nil when it aborted
// no transaction; txn.go) and the producer snapshot taken when it was
// sealed (nil if none is on disk). Close releases the pin; until then the
// bytes stay readable even if retention deletes the segment.
type SegmentView struct {
	SealedSegment
	Log                    io.ReaderAt // Size bytes
	OffsetIndex, TimeIndex []byte
	TxnIndex               []byte
	ProducerSnapshot       []byte
	seg                    *segment
}

// Close releases the segment.
func (v *SegmentView) Close() {
	if v.seg != nil {
		v.seg.release()
		v.seg = nil
	}
}

// ErrNoSegment: OpenSealed named no sealed segment of the log.
var ErrNoSegment = errors.New("log: no such sealed segment")

// OpenSealed pins the sealed segment that starts at base.
func (l *Log) OpenSealed(base int64) (*SegmentView, error) {
	l.mu.RLock()
	var seg *segment
	var f vfs.File
	var end int64
	if !l.closed {
		for i, s := range l.segs[:len(l.segs)-1] {
			if s.base == base {
				end = l.segs[i+1].base
				var err error
				if f, err = s.acquire(); err != nil {
					l.mu.RUnlock()
					return nil, storageErr("open sealed segment", s.logPath(), err)
				}
				seg = s
				break
			}
		}
	}
	var v SegmentView
	if seg != nil {
		x := seg.idx
		x.offsets, x.times = append([]offsetEntry(nil), x.offsets...), append([]timeEntry(nil), x.times...)
		v = SegmentView{SealedSegment: l.sealedLocked(seg, end),
			Log: io.NewSectionReader(f, 0, seg.size), OffsetIndex: encodeOffsets(x.offsets), TimeIndex: encodeTimes(x.times), seg: seg}
		if len(seg.aborted) > 0 {
			v.TxnIndex = txnindex.Encode(seg.aborted)
		}
	}
	l.mu.RUnlock()
	if seg == nil {
		return nil, fmt.Errorf("%w: base %d", ErrNoSegment, base)
	}
	snap, err := vfs.ReadFile(l.fs, l.snapshotPath(v.Next), 64<<20)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
	case err != nil:
		v.Close()
		return nil, storageErr("read producer snapshot", l.snapshotPath(v.Next), err)
	default:
		v.ProducerSnapshot = snap
	}
	return &v, nil
}

// SetRemoteEnd records that every offset below end is safely in the remote
// manifest. With Config.Remote set, retention deletes local segments only
// below it.
func (l *Log) SetRemoteEnd(end int64) {
	l.mu.Lock()
	l.remoteEnd = max(l.remoteEnd, end)
	l.mu.Unlock()
}

// Remote reports whether the log is configured as tiered (Config.Remote).
func (l *Log) Remote() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg.Remote
}

// RemoteEnd is the last value SetRemoteEnd recorded (0 before any).
func (l *Log) RemoteEnd() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.remoteEnd
}

// RestartAt makes an empty log start at offset: a partition restored from
// the bucket continues after what the bucket holds. The log must hold no
// batch; offset must not be below its end. A producer snapshot taken at
// offset (the one uploaded with the last segment), if given, restores the
// idempotence state, so a producer's retry of a batch written before the
// disk was lost is still recognised.
func (l *Log) RestartAt(offset int64, producerSnapshot []byte) error {
	var restored *producers.State
	if producerSnapshot != nil {
		at, ps, err := decodeSnapshot(producerSnapshot)
		if err != nil {
			return err
		}
		if at != offset {
			return fmt.Errorf("log: restart at %d with a producer snapshot taken at %d", offset, at)
		}
		restored = ps
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	leo := l.leoLocked()
	switch {
	case offset == leo:
		return nil
	case offset < leo || l.lso != leo || len(l.segs) != 1 || l.active().size != 0:
		return fmt.Errorf("log: restart at %d: the log is not empty (start %d, end %d)", offset, l.lso, leo)
	}
	// Below offset is the bucket, written by whichever agent led:
	// checked at fetch, like this log's own oldest batches.
	if err := l.raiseValidatedFrom(offset); err != nil {
		return err
	}
	old := l.active()
	seg, err := openSegment(l.files, l.fs, l.dir, offset, true)
	if err != nil {
		return err
	}
	if err := l.setStartLocked(offset); err != nil {
		seg.retire()
		return err
	}
	l.segs = []*segment{seg}
	if err := old.remove(); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return storageErr("restart", l.dir, err)
	}
	l.flushed = offset
	l.remoteEnd = max(l.remoteEnd, offset)
	if restored != nil {
		l.producers = restored
		if err := l.writeSnapshotLocked(offset); err != nil {
			return err
		}
	}
	l.logger.Info("log restarted", "offset", offset, "producer_state", restored != nil)
	return nil
}
