package log

import (
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// FilePool bounds the segment files that the logs sharing it hold open.
// A segment's file is opened when a read, append, sync, preallocation or
// recovery step needs it and stays open while it is used: the handle is
// pinned for the length of that step and never closed under it. Unpinned
// handles wait, most recently used first, to be used again; when opening
// one more would pass the pool's bound, the least recently used of them is
// closed. An agent with 10,000 partitions thus holds as many segment files
// open as its busy partitions need, not one per segment.
//
// Pins for a client's request (appends, reads, syncs) are never refused
// for want of room: a pinned handle counts, and the bound is passed for as
// long as more handles than it are pinned at once (each pin lasts one
// step, so that is brief). Background work that can wait (preallocation,
// which every log starts at open) takes a background pin, refused while
// half the bound is already pinned by background work: 2,000 logs opening
// at once would otherwise pin 2,000 files while they lay their zeros.
//
// Closing and reopening a file keeps fsync's meaning on Linux: an fsync
// through a new descriptor writes back the inode's dirty pages whoever
// dirtied them, and a writeback error that no descriptor has reported yet
// is reported to the next fsync, on any descriptor.
//
// Lock order: Log.mu, then FilePool.mu. The pool never calls into a log.
type FilePool struct {
	max    int // 0: no bound
	logger *slog.Logger

	mu         sync.Mutex
	cond       sync.Cond // broadcast when an open in flight ends
	open       int       // handles open or being opened
	background int       // background pins held
	idle       list.List // of *fileHandle: open, unpinned; front most recent

	opens, evictions, retries atomic.Int64
}

// NewFilePool returns a pool that keeps at most maxOpen files open
// (0: no bound, every file stays open until its segment goes away).
func NewFilePool(maxOpen int, logger *slog.Logger) *FilePool {
	if logger == nil {
		logger = slog.Default()
	}
	p := &FilePool{max: max(maxOpen, 0), logger: logger}
	p.cond.L = &p.mu
	return p
}

// FilePoolStats are the pool's gauges and counters since it was made.
type FilePoolStats struct {
	Open      int   // files open now (pinned or idle)
	Max       int   // the bound; 0 none
	Opens     int64 // files opened
	Evictions int64 // idle files closed to make room
	Retries   int64 // opens retried after EMFILE or ENFILE
}

func (p *FilePool) Stats() FilePoolStats {
	p.mu.Lock()
	n := p.open
	p.mu.Unlock()
	return FilePoolStats{Open: n, Max: p.max, Opens: p.opens.Load(), Evictions: p.evictions.Load(), Retries: p.retries.Load()}
}

// fileHandle is one segment file's place in the pool. Fields after path
// are guarded by pool.mu.
type fileHandle struct {
	pool *FilePool
	fs   vfs.FS
	path string

	flag    int      // for the next open: O_CREATE|O_TRUNC until the first one
	f       vfs.File // nil while closed
	pins    int
	opening bool          // an acquire is opening f outside pool.mu
	retired bool          // the segment is gone: close at the last unpin
	elem    *list.Element // in pool.idle while open and unpinned
}

// errPoolBusy refuses a background pin: background work holds half the
// pool's bound already.
var errPoolBusy = errors.New("log: file pool busy with background work")

// errRetired: a segment was used after its log retired it. Callers hold
// the log's lock and check that the segment is still the log's, so this
// is a bug if it is ever seen.
var errRetired = errors.New("log: segment file used after it was retired")

// acquire pins the handle, opening the file if it is closed, and returns
// it; it stays open until the matching release.
func (h *fileHandle) acquire() (vfs.File, error) { return h.pin(false) }

// acquireBackground is acquire for work that can wait; it fails with
// errPoolBusy when background pins hold half the bound. The matching call
// is releaseBackground.
func (h *fileHandle) acquireBackground() (vfs.File, error) { return h.pin(true) }

func (h *fileHandle) pin(background bool) (vfs.File, error) {
	p := h.pool
	p.mu.Lock()
	for h.opening {
		p.cond.Wait()
	}
	if h.retired {
		p.mu.Unlock()
		return nil, errRetired
	}
	if background {
		if p.max > 0 && p.background >= max(p.max/2, 1) {
			p.mu.Unlock()
			return nil, errPoolBusy
		}
		p.background++
	}
	h.pins++
	if h.f != nil {
		if h.elem != nil {
			p.idle.Remove(h.elem)
			h.elem = nil
		}
		p.mu.Unlock()
		return h.f, nil
	}
	h.opening = true
	p.open++
	evicted := p.evictLocked(0)
	p.mu.Unlock()
	p.closeFiles(evicted)

	f, err := p.openFile(h.fs, h.path, h.flag)

	p.mu.Lock()
	defer p.mu.Unlock()
	h.opening = false
	p.cond.Broadcast()
	if err != nil {
		h.pins--
		p.open--
		if background {
			p.background--
		}
		return nil, err
	}
	h.f, h.flag = f, os.O_RDWR
	return f, nil
}

// release ends a pin; the last one makes the file idle (or closes it, if
// the segment is retired).
func (h *fileHandle) release() { h.unpin(false) }

// releaseBackground ends a pin of acquireBackground.
func (h *fileHandle) releaseBackground() { h.unpin(true) }

func (h *fileHandle) unpin(background bool) {
	p := h.pool
	p.mu.Lock()
	if background {
		p.background--
	}
	h.pins--
	if h.pins < 0 {
		p.mu.Unlock()
		panic("log: segment file released more often than acquired")
	}
	var closing []vfs.File
	switch {
	case h.pins > 0:
	case h.retired:
		closing = append(closing, h.f)
		h.f = nil
		p.open--
	default:
		h.elem = p.idle.PushFront(h)
		closing = p.evictLocked(0) // pins past the bound are over
	}
	p.mu.Unlock()
	p.closeFiles(closing)
}

// retire forbids new pins and closes the file now or at the last release.
func (h *fileHandle) retire() {
	p := h.pool
	p.mu.Lock()
	if h.retired {
		p.mu.Unlock()
		return
	}
	h.retired = true
	var closing []vfs.File
	if h.pins == 0 && h.f != nil {
		p.idle.Remove(h.elem)
		h.elem = nil
		closing = append(closing, h.f)
		h.f = nil
		p.open--
	}
	p.mu.Unlock()
	p.closeFiles(closing)
}

// evictLocked takes idle handles off the back of the list until the pool
// is within its bound, and at least atLeast of them; the caller closes the
// files returned, outside p.mu.
func (p *FilePool) evictLocked(atLeast int) []vfs.File {
	var out []vfs.File
	for p.idle.Len() > 0 && (len(out) < atLeast || p.max > 0 && p.open > p.max) {
		h := p.idle.Remove(p.idle.Back()).(*fileHandle)
		h.elem = nil
		out = append(out, h.f)
		h.f = nil
		p.open--
		p.evictions.Add(1)
	}
	return out
}

// closeFiles closes evicted files. A failure here loses nothing that an
// fsync would not report: the data's pages stay in the page cache and a
// writeback error is kept for the file's next fsync.
func (p *FilePool) closeFiles(files []vfs.File) {
	for _, f := range files {
		if err := f.Close(); err != nil {
			p.logger.Warn("closing idle segment file failed", "file", f.Name(), "err", err)
		}
	}
}

// Opens that find the process out of descriptors (another part of the
// agent holds them: connections, the store's files) close an idle segment
// file and try again, a few times with a pause, before they fail.
const (
	openAttempts = 5
	openBackoff  = 20 * time.Millisecond
)

// ErrNoDescriptors marks an open that failed because the process (or the
// system) ran out of file descriptors even after idle files were closed:
// a retriable condition, not damage.
var ErrNoDescriptors = errors.New("log: out of file descriptors")

// openFile opens one segment file, making room when the process is out
// of descriptors.
func (p *FilePool) openFile(fs vfs.FS, path string, flag int) (vfs.File, error) {
	pause := openBackoff
	for attempt := 1; ; attempt++ {
		f, err := fs.OpenFile(path, flag, 0o644)
		if err == nil {
			p.opens.Add(1)
			return f, nil
		}
		if !isOutOfDescriptors(err) {
			return nil, err
		}
		if attempt == openAttempts {
			st := p.Stats()
			return nil, fmt.Errorf("%w (%d segment files open, bound %d): %w", ErrNoDescriptors, st.Open, st.Max, err)
		}
		p.retries.Add(1)
		p.mu.Lock()
		evicted := p.evictLocked(1)
		p.mu.Unlock()
		if len(evicted) == 0 {
			time.Sleep(pause)
			pause *= 2
		}
		p.closeFiles(evicted)
	}
}

func isOutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
