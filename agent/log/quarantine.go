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
//   - checkedTo: every batch from the partition's start up to checkedTo has
//     been checked, and is good unless listed as bad.
//   - bad: the batches that failed, by base offset and CRC, so that a
//     verdict never applies to another batch written at the same offset
//     after a truncation.
//
// File decompression-checks, framed as in checkpoint.go (magic SLDC),
// replaced atomically at every change:
//
//	offset  size  field
//	     0     8  validatedFrom
//	     8     8  checkedTo
//	    16     4  n, the bad batches (at most maxBadBatches)
//	    20  12×n  base offset (8) and CRC (4) of each, ascending by offset
//
// A missing or unreadable file is treated as a first open: W becomes the
// log end, and the verdicts start over (batches are checked again). A new
// bad verdict or a raised W is written at once; checkedTo alone at most
// every checksPersistEvery and at Close, so that a consumer reading through
// old data does not pay an fsync per fetch (a crash loses at most that
// much progress, which is checked again).

const (
	checksFileName = "decompression-checks"
	// maxBadBatches bounds the verdicts kept; past it, further bad
	// batches are checked again at every read (each needs a bomb stored
	// before the fix, so this is far beyond any real log).
	maxBadBatches = 4096
	// checksPersistEvery spaces out writes that only advance checkedTo.
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

// decompressionChecks is the state above. validatedFrom is read on every
// fetch without a lock; the rest is behind mu, which may be taken while
// holding Log.mu (RestartAt), never the other way round.
type decompressionChecks struct {
	validatedFrom atomic.Int64
	mu            sync.Mutex
	checkedTo     int64
	bad           []BadBatch // ascending Base
	dirty         bool       // checkedTo advanced since the last write
	written       time.Time  // of the last write
}

// ValidatedFrom is W: batches at or above it need no decompression check.
func (l *Log) ValidatedFrom() int64 { return l.checks.validatedFrom.Load() }

// CheckedVerdict reports whether the batch at base with the given CRC has
// been checked (known), and if so whether it failed (bad). start is the
// partition's first offset, where checkedTo counts from.
func (l *Log) CheckedVerdict(start, base int64, crc uint32) (known, bad bool) {
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, found := slices.BinarySearchFunc(c.bad, BadBatch{base, crc}, compareBad); found {
		return true, true
	}
	return base < max(c.checkedTo, start), false
}

// RecordChecks keeps the verdicts of batches a fetch checked, in offset
// order, and persists them. checkedTo advances over verdicts that continue
// it (from start, the partition's first offset, when it lags behind); a
// read that began elsewhere keeps only its bad verdicts, so its good
// batches are checked again until a read from checkedTo reaches them.
func (l *Log) RecordChecks(start int64, verdicts []CheckVerdict) error {
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := false // what must be written now
	to := max(c.checkedTo, start)
	for _, v := range verdicts {
		if v.Bad {
			i, found := slices.BinarySearchFunc(c.bad, v.BadBatch, compareBad)
			if !found && len(c.bad) < maxBadBatches {
				c.bad = slices.Insert(c.bad, i, v.BadBatch)
				changed = true
			}
		}
		if v.Base <= to && v.Next > to {
			to = v.Next
		}
	}
	if to > c.checkedTo {
		c.checkedTo, c.dirty = to, true
	}
	// Verdicts below the partition's start will never be asked for again.
	if i, _ := slices.BinarySearchFunc(c.bad, BadBatch{Base: start}, compareBad); i > 0 {
		c.bad, changed = slices.Delete(c.bad, 0, i), true
	}
	if !changed && !(c.dirty && l.now().Sub(c.written) >= checksPersistEvery) {
		return nil
	}
	return l.persistChecksLocked()
}

// flushChecks writes a checkedTo that advanced since the last write
// (Close).
func (l *Log) flushChecks() error {
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	return l.persistChecksLocked()
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
	c.checkedTo, c.bad = 0, nil
	return l.persistChecksLocked()
}

func (l *Log) decodeChecks(b []byte) error {
	payload, err := decodeFrame(magicChecks, b)
	if err != nil {
		return err
	}
	if len(payload) < 20 {
		return fmt.Errorf("%w: %d-byte decompression checks", errBadStateFile, len(payload))
	}
	n := binary.BigEndian.Uint32(payload[16:])
	if n > maxBadBatches || len(payload) != 20+12*int(n) {
		return fmt.Errorf("%w: %d bad batches in %d bytes", errBadStateFile, n, len(payload))
	}
	bad := make([]BadBatch, n)
	for i := range bad {
		e := payload[20+12*i:]
		bad[i] = BadBatch{Base: int64(binary.BigEndian.Uint64(e)), CRC: binary.BigEndian.Uint32(e[8:])}
	}
	if !slices.IsSortedFunc(bad, compareBad) {
		return fmt.Errorf("%w: bad batches out of order", errBadStateFile)
	}
	c := &l.checks
	c.mu.Lock()
	defer c.mu.Unlock()
	c.validatedFrom.Store(int64(binary.BigEndian.Uint64(payload)))
	c.checkedTo, c.bad = int64(binary.BigEndian.Uint64(payload[8:])), bad
	return nil
}

func (l *Log) persistChecksLocked() error {
	c := &l.checks
	b := make([]byte, 0, 20+12*len(c.bad))
	b = binary.BigEndian.AppendUint64(b, uint64(c.validatedFrom.Load()))
	b = binary.BigEndian.AppendUint64(b, uint64(c.checkedTo))
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
