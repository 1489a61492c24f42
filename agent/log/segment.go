package log

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"
	// scanChunk is the read size of recovery and replay walks.
	scanChunk = 1 << 20
	// maxIndexFileBytes bounds an index file read at open: an index for
	// the largest segment with an entry per minimal batch.
	maxIndexFileBytes = maxSegmentBytes / minSegmentBytes * timeEntrySize
)

// segmentSuffixes are the files of one segment.
var segmentSuffixes = []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// segment is one <base>.log file with its indexes. The file is opened
// through the log's FilePool when a step needs it (acquire ... release) and
// may be closed while idle; every other field is guarded by Log.mu. A pin
// lets a reader keep using a segment that retention or Close removed from
// the log until its ReadAt finishes.
type segment struct {
	fs   vfs.FS
	dir  string
	base int64
	file fileHandle

	size       int64 // bytes of whole batches; readers never look past it
	fileEnd    int64 // end of the preallocated zeros past size; 0: none
	next       int64 // offset after the last batch (base when empty)
	idx        indexes
	sinceIndex int64 // batch bytes since the last offset entry
	maxTs      int64 // largest MaxTimestamp, -1 when empty
	maxTsRel   uint32
	firstTs    int64        // MaxTimestamp of the first batch (segment.ms)
	aborted    []AbortedTxn // the transactions its markers aborted (txn.go)
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base)+suffix)
}

func (s *segment) logPath() string { return s.path(logSuffix) }

func (s *segment) reset() {
	s.size, s.next, s.idx, s.sinceIndex, s.fileEnd = 0, s.base, indexes{}, 0, 0
	s.maxTs, s.maxTsRel, s.firstTs = -1, 0, -1
}

// openSegment opens (create: creates empty) a segment file, state unset.
// The file is opened once here, so that a missing or unreadable file is
// found now, and then left to the pool.
func openSegment(pool *FilePool, fs vfs.FS, dir string, base int64, create bool) (*segment, error) {
	s := &segment{fs: fs, dir: dir, base: base}
	s.reset()
	flag := os.O_RDWR
	if create {
		flag |= os.O_CREATE | os.O_TRUNC
	}
	s.file = fileHandle{pool: pool, fs: fs, path: s.logPath(), flag: flag}
	if err := s.withFile("open segment", func(vfs.File) error { return nil }); err != nil {
		s.retire()
		return nil, err
	}
	return s, nil
}

// withFile runs fn with the segment's file pinned open; op names the step
// in the error when the file cannot be opened.
func (s *segment) withFile(op string, fn func(f vfs.File) error) error {
	f, err := s.acquire()
	if err != nil {
		return storageErr(op, s.logPath(), err)
	}
	defer s.release()
	return fn(f)
}

// track records one batch that now ends the segment at pos..pos+size.
// interval is index.interval.bytes.
func (s *segment) track(h *batch.Header, pos int64, interval int) {
	rel := uint32(h.BaseOffset - s.base)
	if pos == 0 {
		s.firstTs = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxTsRel = h.MaxTimestamp, rel
	}
	n := len(s.idx.offsets)
	if s.sinceIndex >= int64(interval) && (n == 0 || int64(s.idx.offsets[n-1].pos) < pos) && pos > 0 {
		s.idx.offsets = append(s.idx.offsets, offsetEntry{rel: rel, pos: uint32(pos)})
		s.sinceIndex = 0
		s.addTimeEntry()
	}
	s.sinceIndex += int64(h.Size())
	s.size = pos + int64(h.Size())
	s.next = h.NextOffset()
}

// addTimeEntry appends the max timestamp so far if it is new.
func (s *segment) addTimeEntry() {
	if s.maxTs < 0 {
		return
	}
	if last, ok := s.idx.lastTime(); ok && last.ts >= s.maxTs {
		return
	}
	s.idx.times = append(s.idx.times, timeEntry{ts: s.maxTs, rel: s.maxTsRel})
}

// fits reports whether a batch of n bytes ending at offset last can be
// appended without passing the u32 limits of the index.
func (s *segment) fits(n int, last int64) bool {
	return s.size+int64(n) <= math.MaxUint32 && last-s.base <= math.MaxInt32
}

// scan rebuilds the in-memory state by walking the batches from position
// from (which must be a batch start whose state is already in s), stopping
// at the first bad batch. It returns that batch's position and error (nil
// when the file ends cleanly). onBatch, if set, sees each good batch.
func (s *segment) scan(from, fileSize int64, verify bool, interval int, onBatch func(*batch.Header)) (int64, error) {
	f, err := s.acquire()
	if err != nil {
		return from, storageErr("open segment", s.logPath(), err)
	}
	defer s.release()
	w := &window{f: f, end: fileSize, chunk: scanChunk, reuse: true}
	pos := from
	for pos < fileSize {
		h, err := w.batchAt(pos, verify)
		// Offsets only increase; gaps are the cleaner's (or a follower's
		// copy of a cleaned leader's log).
		if err == nil && h.BaseOffset < s.next {
			err = fmt.Errorf("%w: base offset %d, want at least %d", batch.ErrCorrupt, h.BaseOffset, s.next)
		}
		if err == nil && !s.fits(h.Size(), h.LastOffset()) {
			err = fmt.Errorf("%w: batch beyond segment limits", batch.ErrCorrupt)
		}
		if err != nil {
			return pos, err
		}
		s.track(&h, pos, interval)
		if onBatch != nil {
			onBatch(&h)
		}
		pos += int64(h.Size())
	}
	return pos, nil
}

// rebuild recomputes everything from the segment's bytes (up to fileSize).
func (s *segment) rebuild(fileSize int64, verify bool, interval int, onBatch func(*batch.Header)) (int64, error) {
	s.reset()
	return s.scan(0, fileSize, verify, interval, onBatch)
}

// loadIndexes trusts the index files if they pass their checks and the
// batches after the last offset entry walk cleanly to the end of the file;
// it reports false when the caller must rebuild. I/O errors are returned.
func (s *segment) loadIndexes(fileSize int64, interval int) (bool, error) {
	s.reset()
	ob, err := vfs.ReadFile(s.fs, s.path(indexSuffix), maxIndexFileBytes)
	if err != nil {
		return false, ignoreMissing(err)
	}
	tb, err := vfs.ReadFile(s.fs, s.path(timeIndexSuffix), maxIndexFileBytes)
	if err != nil {
		return false, ignoreMissing(err)
	}
	offs, err1 := decodeOffsets(ob, fileSize)
	times, err2 := decodeTimes(tb)
	if err1 != nil || err2 != nil {
		return false, nil
	}
	s.idx = indexes{offsets: offs, times: times}
	from := int64(0)
	if n := len(offs); n > 0 {
		from = int64(offs[n-1].pos)
		s.next = s.base + int64(offs[n-1].rel)
		s.size = from
	}
	if last, ok := s.idx.lastTime(); ok {
		s.maxTs, s.maxTsRel = last.ts, last.rel
	}
	// firstTs comes from the first batch's header.
	if fileSize > 0 {
		var h batch.Header
		err := s.withFile("read segment", func(f vfs.File) error {
			var err error
			h, err = (&window{f: f, end: fileSize, chunk: batch.HeaderSize}).batchAt(0, false)
			return err
		})
		if err != nil {
			if isDataError(err) {
				return false, nil
			}
			return false, storageErr("read segment", s.logPath(), err)
		}
		s.firstTs = h.MaxTimestamp
	}
	end, err := s.scan(from, fileSize, true, interval, nil)
	if err != nil {
		if isDataError(err) {
			return false, nil
		}
		return false, storageErr("read segment", s.logPath(), err)
	}
	if end != fileSize {
		return false, nil
	}
	if last, ok := s.idx.lastTime(); ok && s.base+int64(last.rel) >= s.next {
		return false, nil
	}
	return true, nil
}

func ignoreMissing(err error) error {
	if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, vfs.ErrTooLarge) {
		return nil
	}
	return err
}

// writeIndexes persists both indexes with the final max-timestamp entry.
func (s *segment) writeIndexes() error {
	if err := s.writeIndexFiles(s.encodeIndexes()); err != nil {
		return err
	}
	return s.writeTxnIndex()
}

// encodeIndexes adds the final max-timestamp entry and returns the offset
// and time index files' contents, for writeIndexFiles, which needs no lock.
func (s *segment) encodeIndexes() (offsets, times []byte) {
	s.addTimeEntry()
	return encodeOffsets(s.idx.offsets), encodeTimes(s.idx.times)
}

func (s *segment) writeIndexFiles(offsets, times []byte) error {
	if err := vfs.WriteFileAtomic(s.fs, s.dir, s.path(indexSuffix), offsets); err != nil {
		return storageErr("write index", s.path(indexSuffix), err)
	}
	if err := vfs.WriteFileAtomic(s.fs, s.dir, s.path(timeIndexSuffix), times); err != nil {
		return storageErr("write index", s.path(timeIndexSuffix), err)
	}
	return nil
}

// acquire pins the file open (opening it if the pool closed it) for a
// step that may run outside Log.mu; callers hold Log.mu (read or write) so
// that a retired segment is never acquired. Each successful acquire needs
// one release.
func (s *segment) acquire() (vfs.File, error) { return s.file.acquire() }

func (s *segment) release() { s.file.release() }

// syncData fdatasyncs the segment's file for the Syncer, opening it if the
// pool closed it: an fsync through a new descriptor writes back the
// inode's dirty pages all the same. A failed open is a fileOpenError, so
// that the caller does not take it for lost writes.
func (s *segment) syncData() error {
	f, err := s.acquire()
	if err != nil {
		return &fileOpenError{storageErr("sync", s.logPath(), err)}
	}
	defer s.release()
	return vfs.SyncData(f)
}

// fileOpenError is a sync that could not open its file: nothing written
// was lost, and a later sync may succeed.
type fileOpenError struct{ err error }

func (e *fileOpenError) Error() string { return e.err.Error() }
func (e *fileOpenError) Unwrap() error { return e.err }

// retire closes the file once the last pin is released.
func (s *segment) retire() { s.file.retire() }

// remove retires the segment and deletes its files.
func (s *segment) remove() error {
	s.retire()
	var first error
	for _, suffix := range segmentSuffixes {
		if err := s.fs.Remove(s.path(suffix)); err != nil && !errors.Is(err, iofs.ErrNotExist) && first == nil {
			first = storageErr("remove segment", s.path(suffix), err)
		}
	}
	return first
}
