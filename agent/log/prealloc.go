package log

import (
	"errors"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// Preallocation. Appending to the end of a file makes every fdatasync also
// commit the file's new size and blocks to the filesystem journal; on ext4
// that doubles the CPU and the latency of a small append+fsync. With
// Options.Preallocate a goroutine per log keeps the active segment's file
// written with zeros (and synced) ahead of its end, so that appends
// overwrite blocks the file already has and an fsync only writes data.
//
// The zeros are written under the log's lock, in pieces, and only past
// the segment's end at that moment: appends and zeros never overlap, and
// zeros never cover data. The file is longer than its segment until the
// segment is sealed or the log closes (both cut it back); after a crash,
// recovery drops the zero tail like a torn write. Readers never look past
// the segment's size, so they never see the zeros.

const (
	// minPrealloc is the first step by which a segment is extended; a
	// partition written slowly never holds more than this ahead of it, so
	// that 1,000 partitions cost 64 MiB of zeros, not gigabytes.
	minPrealloc = 64 << 10
	// maxPrealloc bounds the step, which doubles each time appends catch
	// up with the zeros or need more within minFillGap.
	maxPrealloc = 64 << 20
	// preallocPiece is the zeros written per hold of the log's lock, so
	// that appends wait for at most one piece.
	preallocPiece = 128 << 10
	// minFillGap: a partition that needs zeros more often than this gets
	// a bigger step, so that the fills' own fsyncs (each one more flush
	// for the disk, beside the appends') stay few.
	minFillGap = 100 * time.Millisecond
	// maxFillRate is the most zeros a log lays per second (about 20,000
	// records of 1 KiB a second). The closed-loop benchmark at 240 MB/s
	// into one partition lost a third of its throughput to the zeros.
	maxFillRate = 32 << 20
)

var zeros = make([]byte, preallocPiece)

// errStalePrealloc ends a fill whose segment was sealed or cut meanwhile.
var errStalePrealloc = errors.New("segment changed while preallocating")

// startPrealloc starts the goroutine; Close stops it.
func (l *Log) startPrealloc() {
	l.preallocWake = make(chan struct{}, 1)
	l.preallocStop = make(chan struct{})
	l.preallocDone = make(chan struct{})
	go l.preallocLoop()
	l.wakePrealloc()
}

// wakePrealloc asks for a fill without waiting for it.
func (l *Log) wakePrealloc() {
	if l.preallocWake == nil {
		return
	}
	select {
	case l.preallocWake <- struct{}{}:
	default:
	}
}

// stopPrealloc ends the goroutine and waits for it; l.mu is not held.
func (l *Log) stopPrealloc() {
	if l.preallocStop == nil {
		return
	}
	close(l.preallocStop)
	<-l.preallocDone
}

// needsPrealloc: the active segment is within half a step of its zeros'
// end (or past it). l.mu is held.
func (l *Log) needsPreallocLocked(seg *segment) bool {
	return l.preallocWake != nil && seg.fileEnd-seg.size < l.preallocStep.Load()/2 && seg.size < l.cfg.SegmentBytes
}

// preallocIfNeededLocked wakes the goroutine when seg needs more zeros
// (after an append, or a fill that appends overtook). l.mu is held.
func (l *Log) preallocIfNeededLocked(seg *segment) {
	if l.needsPreallocLocked(seg) {
		l.wakePrealloc()
	}
}

func (l *Log) preallocLoop() {
	defer close(l.preallocDone)
	warned := false
	var lastFill time.Time
	var lastBytes int64
	for {
		select {
		case <-l.preallocStop:
			return
		case <-l.preallocWake:
		}
		// Zeros cost the page cache as much as the data that later
		// overwrites them: past maxFillRate they would cost a busy
		// partition more CPU than its cheaper fsyncs save, so it grows
		// its file instead until its rate falls.
		if lastBytes > 0 && float64(lastBytes)/time.Since(lastFill).Seconds() > maxFillRate {
			continue
		}
		start := time.Now()
		filled, err := l.preallocOnce(lastFill)
		if filled > 0 {
			lastFill, lastBytes = start, filled
		}
		switch {
		case err == nil, errors.Is(err, errStalePrealloc), errors.Is(err, errPoolBusy):
			warned = false
		case !warned:
			// A full disk, most likely: appends go on growing the file,
			// and the next roll tries again.
			l.logger.Warn("cannot preallocate segment; appends grow the file", "err", err)
			warned = true
		}
	}
}

// preallocOnce extends the active segment's zeros by one step and syncs
// them; lastFill is when the previous fill began. filled is the bytes of
// the step it took on.
func (l *Log) preallocOnce(lastFill time.Time) (filled int64, err error) {
	l.mu.Lock()
	if l.closed || l.failed != nil {
		l.mu.Unlock()
		return 0, nil
	}
	seg := l.active()
	if !l.needsPreallocLocked(seg) {
		l.mu.Unlock()
		return 0, nil
	}
	step := l.preallocStep.Load()
	if seg.fileEnd > 0 && seg.fileEnd <= seg.size || time.Since(lastFill) < minFillGap {
		// Appends caught up with the zeros, or ate a step faster than
		// minFillGap: lay more at a time.
		step = min(2*step, maxPrealloc)
		l.preallocStep.Store(step)
	}
	from := max(seg.fileEnd, seg.size)
	to := min(from+step, l.cfg.SegmentBytes)
	gen := l.gen
	// A background pin: when many logs lay zeros at once (all of them
	// just opened), the rest wait for their next append to ask again.
	f, err := seg.file.acquireBackground()
	l.mu.Unlock()
	if errors.Is(err, errPoolBusy) {
		return 0, err
	}
	if err != nil {
		return 0, storageErr("preallocate", seg.logPath(), err)
	}
	defer seg.file.releaseBackground()

	for p := from; p < to; p += preallocPiece {
		select {
		case <-l.preallocStop: // Close is waiting
			return to - from, errStalePrealloc
		default:
		}
		if err := l.zeroPiece(f, seg, gen, p, min(p+preallocPiece, to)); err != nil {
			return to - from, err
		}
	}
	start := time.Now()
	// Through the Syncer: 1,000 partitions laying their first zeros at
	// once then share syncfs calls as their appends do.
	if err := l.syncer.sync(seg); err != nil {
		return to - from, storageErr("preallocate", seg.logPath(), err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active() != seg || l.gen != gen {
		return to - from, errStalePrealloc
	}
	seg.fileEnd = max(seg.fileEnd, to)
	l.logger.Debug("preallocated segment", "base", seg.base, "to", to, "sync", time.Since(start))
	l.preallocIfNeededLocked(seg) // appends may already have eaten into it
	return to - from, nil
}

// zeroPiece writes zeros over [max(from, end of data), to) of seg, whose
// file f the caller holds pinned.
func (l *Log) zeroPiece(f vfs.File, seg *segment, gen uint64, from, to int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.active() != seg || l.gen != gen {
		return errStalePrealloc
	}
	start := max(from, seg.size)
	if start >= to {
		return nil
	}
	if _, err := f.WriteAt(zeros[:to-start], start); err != nil {
		return storageErr("preallocate", seg.logPath(), err)
	}
	return nil
}

// trimLocked cuts seg's file back to its data, dropping preallocated
// zeros, before it is sealed or the log closes. l.mu is held.
func (l *Log) trimLocked(seg *segment) error {
	if l.preallocWake == nil {
		return nil
	}
	seg.fileEnd = 0
	if err := seg.withFile("trim", func(f vfs.File) error { return f.Truncate(seg.size) }); err != nil {
		return storageErr("trim", seg.logPath(), err)
	}
	return nil
}
