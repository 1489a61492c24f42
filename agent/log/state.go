package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
	"github.com/strata-streaming/strata/internal/vfs"
)

func (l *Log) persistEpochs(c *epochCache) error {
	p := filepath.Join(l.dir, epochFileName)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, p, c.encode()); err != nil {
		return storageErr("write epochs", p, err)
	}
	return nil
}

func (l *Log) persistStart(lso int64) error {
	p := filepath.Join(l.dir, startFileName)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, p, encodeFrame(magicStart, binary.BigEndian.AppendUint64(nil, uint64(lso)))); err != nil {
		return storageErr("write log start", p, err)
	}
	return nil
}

// loadStart reads the persisted log start; 0 if absent or unreadable.
func (l *Log) loadStart() (int64, error) {
	p := filepath.Join(l.dir, startFileName)
	b, err := vfs.ReadFile(l.fs, p, maxStateFile)
	if errors.Is(err, iofs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, storageErr("read log start", p, err)
	}
	payload, err := decodeFrame(magicStart, b)
	if err == nil && len(payload) != 8 {
		err = fmt.Errorf("%w: %d-byte log start", errBadStateFile, len(payload))
	}
	if err != nil {
		l.logger.Warn("ignoring bad log start checkpoint", "path", p, "err", err)
		return 0, nil
	}
	return max(int64(binary.BigEndian.Uint64(payload)), 0), nil
}

// loadEpochs reads the epoch checkpoint; ok is false if it was absent or
// bad (the caller rebuilds the cache from batch headers).
func (l *Log) loadEpochs() (epochCache, bool, error) {
	p := filepath.Join(l.dir, epochFileName)
	b, err := vfs.ReadFile(l.fs, p, maxStateFile)
	if errors.Is(err, iofs.ErrNotExist) {
		return epochCache{}, false, nil
	}
	if err != nil {
		return epochCache{}, false, storageErr("read epochs", p, err)
	}
	c, err := decodeEpochs(b)
	if err != nil {
		l.logger.Warn("rebuilding bad leader epoch checkpoint", "path", p, "err", err)
		return epochCache{}, false, nil
	}
	return c, true, nil
}

func (l *Log) snapshotPath(offset int64) string {
	return filepath.Join(l.producerDir(), segmentName(offset)+snapSuffix)
}

func (l *Log) writeSnapshotLocked(offset int64) error {
	p := l.snapshotPath(offset)
	if err := vfs.WriteFileAtomic(l.fs, l.producerDir(), p, encodeSnapshot(l.producers, offset)); err != nil {
		return storageErr("write producer snapshot", p, err)
	}
	return nil
}

// snapshots lists snapshot offsets, ascending; stray temp files are removed.
func (l *Log) snapshots() []int64 {
	names, err := l.fs.ReadDir(l.producerDir())
	if err != nil {
		return nil
	}
	var offs []int64
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			_ = l.fs.Remove(filepath.Join(l.producerDir(), n))
			continue
		}
		if off, ok := parseBase(n, snapSuffix); ok {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs
}

// pruneSnapshotsLocked deletes snapshots for which keep is false. A failure
// is only logged: a stale snapshot is ignored or replaced later.
func (l *Log) pruneSnapshotsLocked(keep func(offset int64) bool) {
	for _, off := range l.snapshots() {
		if !keep(off) {
			if err := l.fs.Remove(l.snapshotPath(off)); err != nil {
				l.logger.Warn("cannot remove producer snapshot", "offset", off, "err", err)
			}
		}
	}
}

// loadProducersLocked rebuilds producer state as of offset upTo: the newest
// good snapshot at or below it, then the batches after the snapshot.
func (l *Log) loadProducersLocked(upTo int64) error {
	ps, from := producers.New(), l.segs[0].base
	offs := l.snapshots()
	if l.replayAll {
		offs, l.replayAll = nil, false
	}
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] > upTo {
			continue
		}
		b, err := vfs.ReadFile(l.fs, l.snapshotPath(offs[i]), maxStateFile)
		if err != nil {
			l.logger.Warn("skipping unreadable producer snapshot", "offset", offs[i], "err", err)
			continue
		}
		off, snap, err := decodeSnapshot(b)
		if err == nil && off != offs[i] {
			err = fmt.Errorf("%w: snapshot offset %d in file %d", errBadStateFile, off, offs[i])
		}
		if err != nil {
			l.logger.Warn("skipping bad producer snapshot", "offset", offs[i], "err", err)
			continue
		}
		ps, from = snap, max(off, from)
		break
	}
	// The aborted transactions after the snapshot are rebuilt with the
	// state (txn.go).
	l.dropTxnsFromLocked(from)
	l.producers = ps
	return l.walkLocked(from, upTo, func(h *batch.Header, m batch.Marker) {
		l.recordTxnLocked(l.producers.Update(h, m))
	})
}

// walkLocked calls fn for every batch header with base offset in
// [from, to), with the marker of a control batch, reading the segments
// without the CRC check (recovery has done it). Used only where holding
// l.mu across I/O is acceptable (recovery, truncation).
func (l *Log) walkLocked(from, to int64, fn func(*batch.Header, batch.Marker)) error {
	for _, s := range l.segs {
		if s.next <= from || s.base >= to {
			continue
		}
		pos := int64(0)
		if from > s.base {
			pos = int64(s.idx.floor(uint32(from - s.base)).pos)
		}
		if err := s.withFile("replay", func(f vfs.File) error {
			w := &window{f: f, end: s.size, chunk: scanChunk, reuse: true}
			for pos < s.size {
				h, err := w.batchAt(pos, false)
				if err != nil {
					return err
				}
				if h.BaseOffset >= to {
					break
				}
				if h.BaseOffset >= from {
					m := batch.Marker{Type: -1}
					if h.IsControl() {
						raw, err := w.get(pos, h.Size())
						if err != nil {
							return err
						}
						m = l.markerOf(&h, raw)
					}
					fn(&h, m)
				}
				pos += int64(h.Size())
			}
			return nil
		}); err != nil {
			return storageErr("replay", s.logPath(), err)
		}
	}
	return nil
}

// parseBase parses "<20 digits><suffix>".
func parseBase(name, suffix string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, suffix)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
