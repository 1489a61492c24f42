package log

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// Batches appended before Produce bounded decompression (issue 19) were
// never checked and may be decompression bombs. The fetch path
// (agent/kafka/quarantine.go) checks those it serves, once each, and keeps
// its verdicts here, beside the one offset that says which batches need
// no check at all:
//
//   - validatedFrom (W): every batch at or above W was checked when it was
//     appended (by Produce on a leader; a follower copies what its leader
//     serves, which passed the same rule). It is the log end the first time
//     a build that checks opens the log (0 for a new log), and rises to the
//     offset a follower restarts at (RestartAt), since what lies below that
//     is in the bucket, written by whichever agent led then.
//   - checked ranges: every batch whose base offset lies in one of them has
//     been checked, and is good unless listed as bad. A fetch checks a run
//     of consecutive batches, which becomes a range merged with its
//     neighbours, so readers that start anywhere (a consumer group resuming
//     at its committed offset) add to what later readers skip. At most
//     maxCheckedRanges are kept; past that the shortest is forgotten.
//   - bad: the batches that failed, by base offset and CRC, so that a
//     verdict never applies to another batch written at the same offset
//     after a truncation.
//
// File decompression-checks, framed as in checkpoint.go (magic SLDC),
// replaced atomically:
//
//	offset  size  field
//	     0     8  validatedFrom
//	     8     4  r, the checked ranges (at most maxCheckedRanges)
//	    12  16×r  from (8) and to (8) of each, ascending, disjoint
//	     …     4  n, the bad batches (at most maxBadBatches)
//	     …  12×n  base offset (8) and CRC (4) of each, ascending by offset
//
// A missing or unreadable file is treated as a first open: W becomes the
// log end, and the verdicts start over (batches are checked again). A new
// bad verdict or a raised W is written at once; grown ranges alone at most
// every checksPersistEvery and at Close, so that a consumer reading through
// old data does not pay an fsync per fetch (a crash loses at most that
// much progress, which is checked again).

const (
	checksFileName = "decompression-checks"
	// maxBadBatches bounds the verdicts kept; past it, further bad
	// batches are checked again at every read (each needs a bomb stored
	// before the fix, so this is far beyond any real log).
	maxBadBatches = 4096
	// maxCheckedRanges bounds the checked ranges: one per place readers
	// started at that no other reader has joined up yet.
	maxCheckedRanges = 256
	// checksPersistEvery spaces out writes that only grow the ranges.
	checksPersistEvery = time.Second
)

var magicChecks = [4]byte{'S', 'L', 'D', 'C'}

// BadBatch names a batch that failed the decompression check.
type BadBatch struct {
	Base int64
	CRC  uint32
}

// CheckVerdict is the check of one stored batch.
type CheckVerdict struct {
	BadBatch
	Next int64 // the offset after the batch
	Bad  bool
}

// checkedRange holds the batches whose base offset is in [From, To).
type checkedRange struct{ From, To int64 }

// decompressionChecks is the state above. validatedFrom is read on every
// fetch without a lock; the rest is behind mu, which may be taken while
// holding Log.mu (RestartAt, Close), never the other way round.
type decompressionChecks struct {
	validatedFrom atomic.Int64
	mu            sync.Mutex
	checked       []checkedRange // ascending, disjoint, not touching
	bad           []BadBatch     // ascending Base
	dirty         bool           // ranges grew since the last write
	written       time.Time      // of the last write
}

// ValidatedFrom is W: batches at or above it need no decompression check.
func (l *Log) ValidatedFrom() int64 { return l.checks.validatedFrom.Load() }

// CheckedVerdict reports whether the batch at base with the given CRC has
// been checked (known), and if so whether it failed (bad).
func (l *Log) CheckedVerdict(base int64, crc uint32) (known, bad bool) {
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, found := slices.BinarySearchFunc(c.bad, BadBatch{base, crc}, compareBad); found {
		return true, true
	}
	i, _ := slices.BinarySearchFunc(c.checked, base, func(r checkedRange, off int64) int {
		switch {
		case r.To <= off:
			return -1
		case r.From > off:
			return 1
		}
		return 0
	})
	return i < len(c.checked) && c.checked[i].From <= base && base < c.checked[i].To, false
}

// RecordChecks keeps the verdicts of batches a fetch checked, in offset
// order: each run of consecutive batches becomes a checked range. Ranges
// and bad verdicts below start, the partition's first offset, are dropped.
func (l *Log) RecordChecks(start int64, verdicts []CheckVerdict) error {
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false // what must be written now
	for i := 0; i < len(verdicts); {
		j := i + 1
		for j < len(verdicts) && verdicts[j].Base == verdicts[j-1].Next {
			j++
		}
		if c.addRange(checkedRange{verdicts[i].Base, verdicts[j-1].Next}) {
			c.dirty = true
		}
		i = j
	}
	for _, v := range verdicts {
		if !v.Bad {
			continue
		}
		i, found := slices.BinarySearchFunc(c.bad, v.BadBatch, compareBad)
		if !found && len(c.bad) < maxBadBatches {
			c.bad = slices.Insert(c.bad, i, v.BadBatch)
			changed = true
		}
	}
	// Verdicts below the partition's start will never be asked for again.
	if i, _ := slices.BinarySearchFunc(c.bad, BadBatch{Base: start}, compareBad); i > 0 {
		c.bad, changed = slices.Delete(c.bad, 0, i), true
	}
	if n := len(c.checked); n > 0 && c.checked[0].From < start {
		k := 0
		for k < n && c.checked[k].To <= start {
			k++
		}
		c.checked = slices.Delete(c.checked, 0, k)
		if len(c.checked) > 0 && c.checked[0].From < start {
			c.checked[0].From = start
		}
		c.dirty = true
	}
	if !changed && !(c.dirty && l.now().Sub(c.written) >= checksPersistEvery) {
		return nil
	}
	return l.persistChecksLocked()
}

// addRange merges r into the checked ranges and reports whether they grew.
func (c *decompressionChecks) addRange(r checkedRange) bool {
	if r.From >= r.To {
		return false
	}
	// The ranges that overlap or touch r: [i, j).
	i := 0
	for i < len(c.checked) && c.checked[i].To < r.From {
		i++
	}
	j := i
	for j < len(c.checked) && c.checked[j].From <= r.To {
		j++
	}
	if j == i+1 && c.checked[i].From <= r.From && r.To <= c.checked[i].To {
		return false // already covered
	}
	if j > i {
		r.From, r.To = min(r.From, c.checked[i].From), max(r.To, c.checked[j-1].To)
	}
	c.checked = slices.Replace(c.checked, i, j, r)
	if len(c.checked) > maxCheckedRanges {
		shortest := 0
		for k, x := range c.checked {
			if x.To-x.From < c.checked[shortest].To-c.checked[shortest].From {
				shortest = k
			}
		}
		c.checked = slices.Delete(c.checked, shortest, shortest+1)
	}
	return true
}

// raiseValidatedFrom lifts W to at least offset and persists it before
// returning, so that a crash never leaves a W below what callers relied on.
func (l *Log) raiseValidatedFrom(offset int64) error {
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	if offset <= c.validatedFrom.Load() {
		return nil
	}
	c.validatedFrom.Store(offset)
	return l.persistChecksLocked()
}

// flushChecks writes ranges that grew since the last write (Close).
func (l *Log) flushChecks() error {
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	return l.persistChecksLocked()
}

// loadChecks reads the file at Open; without one, W is leo (everything
// in the log now was appended before this build checked) and the file is
// written at once, so that W stays put when the log grows.
func (l *Log) loadChecks(leo int64) error {
	p := filepath.Join(l.dir, checksFileName)
	b, err := vfs.ReadFile(l.fs, p, maxStateFile)
	if err == nil {
		err = l.decodeChecks(b)
		if err == nil {
			return nil
		}
		l.logger.Warn("ignoring bad decompression checks; batches below the log end will be checked again", "path", p, "err", err)
	} else if !errors.Is(err, iofs.ErrNotExist) {
		return storageErr("read decompression checks", p, err)
	}
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	c.validatedFrom.Store(leo)
	c.checked, c.bad = nil, nil
	return l.persistChecksLocked()
}

func (l *Log) decodeChecks(b []byte) error {
	payload, err := decodeFrame(magicChecks, b)
	if err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: decompression checks: "+format, append([]any{errBadStateFile}, args...)...)
	}
	if len(payload) < 12 {
		return bad("%d bytes", len(payload))
	}
	w := int64(binary.BigEndian.Uint64(payload))
	r := binary.BigEndian.Uint32(payload[8:])
	rest := payload[12:]
	if r > maxCheckedRanges || len(rest) < 16*int(r)+4 {
		return bad("%d ranges in %d bytes", r, len(rest))
	}
	checked := make([]checkedRange, r)
	for i := range checked {
		e := rest[16*i:]
		checked[i] = checkedRange{int64(binary.BigEndian.Uint64(e)), int64(binary.BigEndian.Uint64(e[8:]))}
		if checked[i].From >= checked[i].To || i > 0 && checked[i-1].To >= checked[i].From {
			return bad("range %d [%d, %d) empty or out of order", i, checked[i].From, checked[i].To)
		}
	}
	rest = rest[16*r:]
	n := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if n > maxBadBatches || len(rest) != 12*int(n) {
		return bad("%d bad batches in %d bytes", n, len(rest))
	}
	batches := make([]BadBatch, n)
	for i := range batches {
		e := rest[12*i:]
		batches[i] = BadBatch{Base: int64(binary.BigEndian.Uint64(e)), CRC: binary.BigEndian.Uint32(e[8:])}
	}
	if !slices.IsSortedFunc(batches, compareBad) {
		return bad("bad batches out of order")
	}
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	c.validatedFrom.Store(w)
	c.checked, c.bad = checked, batches
	return nil
}

func (l *Log) persistChecksLocked() error {
	c := &l.checks
	b := make([]byte, 0, 16+16*len(c.checked)+12*len(c.bad))
	b = binary.BigEndian.AppendUint64(b, uint64(c.validatedFrom.Load()))
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.checked)))
	for _, r := range c.checked {
		b = binary.BigEndian.AppendUint64(b, uint64(r.From))
		b = binary.BigEndian.AppendUint64(b, uint64(r.To))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(c.bad)))
	for _, e := range c.bad {
		b = binary.BigEndian.AppendUint64(b, uint64(e.Base))
		b = binary.BigEndian.AppendUint32(b, e.CRC)
	}
	p := filepath.Join(l.dir, checksFileName)
	if err := vfs.WriteFileAtomic(l.fs, l.dir, p, encodeFrame(magicChecks, b)); err != nil {
		return storageErr("write decompression checks", p, err)
	}
	c.dirty, c.written = false, l.now()
	return nil
}

func compareBad(a, b BadBatch) int {
	if a.Base != b.Base {
		return cmp.Compare(a.Base, b.Base)
	}
	return cmp.Compare(a.CRC, b.CRC)
}
