package log

import (
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-streaming/strata/agent/log/producers"
	"github.com/strata-streaming/strata/internal/vfs"
)

// Options are the log's collaborators; zero values pick the defaults.
type Options struct {
	FS     vfs.FS           // default vfs.Default
	Logger *slog.Logger     // default slog.Default()
	Now    func() time.Time // default time.Now; retention and producer expiry
	// Syncer, shared by an agent's logs, batches their fsyncs; nil syncs
	// each log on its own.
	Syncer *Syncer
	// Preallocate keeps the active segment's file zero-filled ahead of its
	// end (prealloc.go).
	Preallocate bool
	// Files, shared by an agent's logs, bounds the segment files they hold
	// open (files.go); nil gives the log a pool of its own with no bound.
	Files *FilePool
}

// AppendResult describes one appended (or duplicate) batch.
type AppendResult struct {
	BaseOffset, LastOffset int64
	// LogAppendTime is the batch's MaxTimestamp when it carries
	// AttrLogAppendTime (the caller stamps it), else -1.
	LogAppendTime  int64
	LogStartOffset int64
	// Duplicate: an idempotent retry; the offsets are the original ones
	// and nothing was written.
	Duplicate bool
}

// Stats are counters since Open.
type Stats struct {
	Appends int64 // batches written
	Bytes   int64 // bytes written
	Fsyncs  int64 // fsyncs of segment files (group commits and rolls)
	// FsyncTime is the time those fsyncs took, as the log waited for
	// them: a group commit's wait for a shared syncfs (Syncer) included.
	FsyncTime time.Duration
}

// Log is one partition's log. See the package comment for the contract.
type Log struct {
	dir    string
	fs     vfs.FS
	logger *slog.Logger
	now    func() time.Time
	syncer *Syncer
	files  *FilePool

	// The preallocation goroutine's signals (nil without Preallocate) and
	// its current step.
	preallocWake, preallocStop, preallocDone chan struct{}
	preallocStep                             atomic.Int64

	// flushMu serialises fsyncs so that one covers every append before
	// it (group commit). Lock order: flusherMu, then flushMu, then mu.
	flushMu sync.Mutex

	mu        sync.RWMutex
	cfg       Config
	segs      []*segment // ascending base offsets; the last is active; never empty while open
	lso       int64
	epochs    epochCache
	producers *producers.State // never nil; replaced by loadProducersLocked and RestartAt
	replayAll bool             // recovery found a bad transaction index (txn.go)
	flushed   int64            // offsets below are fsynced
	remoteEnd int64            // offsets below are in the remote manifest (tier.go)
	gen       uint64
	truncs    []truncation // recent truncations, for appends waiting on an fsync
	failed    error
	closed    bool

	// checks are the decompression checks of old batches (quarantine.go).
	checks decompressionChecks

	// firstDirty is the cleaner checkpoint: offsets below it are cleaned
	// (clean.go). cleanMu keeps cleaning passes on this log apart; it is
	// taken before mu.
	firstDirty int64
	cleanMu    sync.Mutex

	// swapping is set (under mu) while a cleaned group of segments is
	// swapped in: its directory fsyncs and index writes run outside mu
	// so that appends do not wait for them, and whatever deletes or
	// truncates segments waits on swapDone first (waitSwapLocked).
	swapping bool
	swapDone *sync.Cond // on mu

	flusherMu   sync.Mutex
	flusherStop chan struct{}
	flusherWG   sync.WaitGroup

	closeOnce sync.Once
	closeErr  error

	appends, bytes, fsyncs atomic.Int64
	fsyncNanos             atomic.Int64 // Stats.FsyncTime
}

// truncation records that generation gen cut the log to point.
type truncation struct {
	gen   uint64
	point int64
}

// maxTruncationHistory bounds Log.truncs; an append older than the history
// is reported as truncated, which is safe (the producer retries).
const maxTruncationHistory = 32

// Open opens the log in dir, creating dir if missing, and recovers it
// (package comment, "Recovery").
func Open(dir string, cfg Config, opts Options) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Files == nil {
		opts.Files = NewFilePool(0, opts.Logger)
	}
	l := &Log{
		dir:       dir,
		fs:        opts.FS,
		logger:    opts.Logger.With("log", dir),
		now:       opts.Now,
		syncer:    opts.Syncer,
		files:     opts.Files,
		cfg:       cfg,
		producers: producers.New(),
	}
	l.swapDone = sync.NewCond(&l.mu)
	for _, d := range []string{dir, l.producerDir()} {
		if err := l.fs.MkdirAll(d, 0o755); err != nil {
			return nil, storageErr("mkdir", d, err)
		}
	}
	err := l.recover()
	if err == nil {
		err = l.loadChecks(l.leoLocked())
	}
	if err != nil {
		for _, s := range l.segs {
			s.retire()
		}
		return nil, err
	}
	l.restartFlusher()
	if opts.Preallocate {
		l.preallocStep.Store(minPrealloc)
		l.startPrealloc()
	}
	return l, nil
}

func (l *Log) producerDir() string { return filepath.Join(l.dir, producerDirName) }

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

// leoLocked is the next offset to assign.
func (l *Log) leoLocked() int64 { return l.active().next }

// waitSwapLocked waits, releasing mu meanwhile, until no cleaned group is
// being swapped in. Callers that delete or truncate segments call it
// before they look at them.
func (l *Log) waitSwapLocked() {
	for l.swapping {
		l.swapDone.Wait()
	}
}

// LogStartOffset is the first readable offset.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.lso
}

// LogEndOffset is the next offset to assign.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return -1
	}
	return l.leoLocked()
}

// FlushedOffset is the offset below which every batch is fsynced. With
// log.flush=always a caller that must not expose unsynced data (a single
// replica's high watermark) bounds reads by it.
func (l *Log) FlushedOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.flushed
}

// Size is the bytes of all segment files.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// Segments is the number of segments (the active one included).
func (l *Log) Segments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segs)
}

// LatestEpoch is the newest leader epoch in the epoch cache, -1 if none.
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.latest()
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <= the
// requested one and the start offset of the next higher epoch (or the log
// end for the latest epoch); (-1, -1) when the epoch is unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return -1, -1
	}
	return l.epochs.endOffsetFor(epoch, l.leoLocked())
}

// countFsync counts an fsync that started at start.
func (l *Log) countFsync(start time.Time) {
	l.fsyncs.Add(1)
	l.fsyncNanos.Add(int64(time.Since(start)))
}

// Stats returns counters since Open.
func (l *Log) Stats() Stats {
	return Stats{Appends: l.appends.Load(), Bytes: l.bytes.Load(), Fsyncs: l.fsyncs.Load(), FsyncTime: time.Duration(l.fsyncNanos.Load())}
}

// SetConfig changes the settings; a smaller segment.bytes applies from the
// next append, retention from the next ApplyRetention.
func (l *Log) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	old := l.cfg
	l.cfg = cfg
	l.mu.Unlock()
	if old.Flush != cfg.Flush || old.FlushInterval != cfg.FlushInterval {
		l.restartFlusher()
	}
	return nil
}

// restartFlusher stops the interval flusher and starts a new one if the
// policy asks for it.
func (l *Log) restartFlusher() {
	l.flusherMu.Lock()
	defer l.flusherMu.Unlock()
	l.stopFlusherLocked()
	l.mu.RLock()
	cfg, closed := l.cfg, l.closed
	l.mu.RUnlock()
	if closed || cfg.Flush != FlushInterval {
		return
	}
	stop := make(chan struct{})
	l.flusherStop = stop
	l.flusherWG.Add(1)
	go func() {
		defer l.flusherWG.Done()
		t := time.NewTicker(cfg.FlushInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := l.Sync(); err != nil && !errors.Is(err, ErrClosed) {
					l.logger.Error("interval flush failed", "err", err)
				}
			}
		}
	}()
}

func (l *Log) stopFlusherLocked() {
	if l.flusherStop != nil {
		close(l.flusherStop)
		l.flusherWG.Wait()
		l.flusherStop = nil
	}
}

// Close stops, in order: the interval flusher; appends and reads (later
// calls return ErrClosed); then it fsyncs the active segment, writes its
// indexes, a producer-state snapshot and the clean-shutdown mark, and closes
// the files (a read in flight finishes first). A log that failed for writes
// is closed without the mark, so the next Open recovers it. Close is
// idempotent; later calls return nil.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.stopPrealloc()
		l.flusherMu.Lock()
		l.stopFlusherLocked()
		l.flushMu.Lock()
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.flusherMu.Unlock()
		defer l.flushMu.Unlock()

		l.mu.Lock()
		defer l.mu.Unlock()
		l.waitSwapLocked()
		if l.failed == nil {
			l.closeErr = l.shutdownLocked()
		}
		for _, s := range l.segs {
			s.retire()
		}
	})
	return l.closeErr
}

func (l *Log) shutdownLocked() error {
	if err := l.flushChecks(); err != nil {
		return err
	}
	a := l.active()
	if err := l.trimLocked(a); err != nil {
		return err
	}
	start := time.Now()
	if err := a.withFile("sync", func(f vfs.File) error { return f.Sync() }); err != nil {
		return storageErr("sync", a.logPath(), err)
	}
	l.countFsync(start)
	if err := a.writeIndexes(); err != nil {
		return err
	}
	leo := l.leoLocked()
	if err := l.writeSnapshotLocked(leo); err != nil {
		return err
	}
	l.pruneSnapshotsLocked(func(off int64) bool { return off <= a.base || off == leo })
	if err := vfs.WriteFileAtomic(l.fs, l.dir, filepath.Join(l.dir, cleanFileName), encodeFrame(magicClean, nil)); err != nil {
		return storageErr("write clean mark", cleanFileName, err)
	}
	return nil
}
