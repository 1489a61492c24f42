package log

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// groupSyncMin is the batch size from which one syncfs replaces an fsync
// per file. syncfs also writes back whatever else on the filesystem is
// dirty, so a pair of logs is still synced file by file.
const groupSyncMin = 4

// Syncer is group commit across logs. Group commit within a log has one
// fsync cover every append since the last; but a producer spread over
// many partitions still costs an fsync per partition per request, and on
// ext4 each costs a journal commit of its own. A Syncer gathers the logs
// that ask for an fsync while another sync runs, and makes the next batch
// of them durable together: with one syncfs(2) of the data directory's
// filesystem when there are groupSyncMin or more, else an fdatasync each.
//
// syncfs also writes back everything else dirty on the filesystem, so it
// is cheap only while the agent is that filesystem's main writer. The
// Syncer times both ways per file synced and uses the cheaper one, trying
// the other every exploreEvery batches, so that a busy neighbour on a
// shared disk turns it back to fsyncs.
//
// syncfs reports a writeback error on the filesystem without naming the
// file, and only once per open handle: after the first such error the
// Syncer falls back to fsyncs file by file for good, because only a
// file's own fsync still reports what it lost.
type Syncer struct {
	fs vfs.FSSyncer // nil: no syncfs here, always file by file

	running sync.Mutex // held while a batch syncs
	mu      sync.Mutex
	open    *syncBatch // the batch still taking members
	perFile atomic.Bool

	// Seconds per file of recent batches of groupSyncMin or more, synced
	// by syncfs ([viaFS]) and by fsyncs ([viaFiles]), and the count of
	// such batches. Guarded by running.
	costs   [2]recentCosts
	batches int

	groupSyncs atomic.Int64
	grouped    atomic.Int64
}

// syncable is a file the Syncer makes durable. A log's segment opens its
// file (through the FilePool) only when the Syncer syncs it by itself: a
// batch made durable by one syncfs needs no file open, so that a produce
// to 2,000 partitions does not hold 2,000 files while it waits.
type syncable interface {
	syncData() error
}

// maxParallelSyncs bounds the files a batch synced file by file has open
// and in flight at once.
const maxParallelSyncs = 64

// syncBatch is the files of one sync, and each one's outcome.
type syncBatch struct {
	files []syncable
	done  chan struct{}
	errs  []error // by position in files, set before done closes
}

// NewSyncer returns a Syncer for the logs under dir, which must all be on
// one filesystem (the agent's data directory).
func NewSyncer(fs vfs.FS, dir string) (*Syncer, error) {
	fss, err := vfs.OpenFSSyncer(fs, dir)
	if err != nil {
		return nil, storageErr("open for syncfs", dir, err)
	}
	return &Syncer{fs: fss}, nil
}

// Close releases the directory handle.
func (s *Syncer) Close() error {
	if s == nil || s.fs == nil {
		return nil
	}
	return s.fs.Close()
}

// SyncerStats counts the batches synced with one syncfs and the files they
// covered.
type SyncerStats struct {
	GroupSyncs, GroupedFiles int64
}

func (s *Syncer) Stats() SyncerStats {
	return SyncerStats{GroupSyncs: s.groupSyncs.Load(), GroupedFiles: s.grouped.Load()}
}

// sync makes f's data durable, alone or with the files of other logs that
// asked at about the same time. The first member of a batch runs it once
// the batch before it is done; until then, other logs join.
func (s *Syncer) sync(f syncable) error {
	if s == nil {
		return f.syncData()
	}
	s.mu.Lock()
	b := s.open
	if b == nil {
		b = &syncBatch{done: make(chan struct{})}
		s.open = b
	}
	i := len(b.files)
	b.files = append(b.files, f)
	s.mu.Unlock()
	if i > 0 {
		<-b.done
		return b.errs[i]
	}

	s.running.Lock()
	s.mu.Lock()
	s.open = nil // later callers start the next batch
	s.mu.Unlock()
	b.errs = s.run(b.files)
	s.running.Unlock()
	close(b.done)
	return b.errs[0]
}

const (
	viaFS = iota
	viaFiles
)

// exploreEvery: one batch in this many is synced the way that looked
// costlier, to notice when it no longer is.
const exploreEvery = 8

// run syncs one batch and returns each file's outcome. s.running is held.
func (s *Syncer) run(files []syncable) []error {
	errs := make([]error, len(files))
	if len(files) < groupSyncMin || s.fs == nil || s.perFile.Load() {
		s.syncFiles(files, errs)
		return errs
	}
	s.batches++
	way := viaFS
	switch {
	case !s.costs[viaFS].known() || !s.costs[viaFiles].known():
		way = 1 - s.batches%2 // learn both first, syncfs first
	case s.costs[viaFiles].median() < s.costs[viaFS].median():
		way = viaFiles
	}
	if s.batches%exploreEvery == 0 {
		way = 1 - way
	}
	start := time.Now()
	if way == viaFiles {
		s.syncFiles(files, errs)
		s.costs[viaFiles].add(time.Since(start).Seconds() / float64(len(files)))
		return errs
	}
	if s.fs.SyncFS() != nil {
		// Which files lost data is now known only to their own fsyncs.
		s.perFile.Store(true)
		s.syncFiles(files, errs)
		return errs
	}
	s.costs[viaFS].add(time.Since(start).Seconds() / float64(len(files)))
	s.groupSyncs.Add(1)
	s.grouped.Add(int64(len(files)))
	return errs
}

// recentCosts keeps the last few costs of one way of syncing. Their median
// ignores the odd slow sync (the first syncfs after many files were
// created also writes back all their metadata).
type recentCosts struct {
	last [5]float64
	n    int
}

func (c *recentCosts) add(v float64) {
	c.last[c.n%len(c.last)] = v
	c.n++
}

func (c *recentCosts) known() bool { return c.n >= 3 }

func (c *recentCosts) median() float64 {
	k := min(c.n, len(c.last))
	v := slices.Clone(c.last[:k])
	slices.Sort(v)
	return v[k/2]
}

// syncFiles fdatasyncs each file, up to maxParallelSyncs at once.
func (s *Syncer) syncFiles(files []syncable, errs []error) {
	if len(files) == 1 {
		errs[0] = files[0].syncData()
		return
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelSyncs)
	for i, f := range files {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			errs[i] = f.syncData()
		})
	}
	wg.Wait()
}
