package log

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// countingFS counts the files open through it, the most at once, and can
// fail opens with EMFILE as a process out of descriptors does.
type countingFS struct {
	vfs.FS
	open, peak atomic.Int64
	emfile     atomic.Int64 // opens still to fail
}

func (c *countingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	if c.emfile.Add(-1) >= 0 {
		return nil, &iofs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	c.emfile.Store(0)
	f, err := c.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	n := c.open.Add(1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	return &countedFile{File: f, fs: c}, nil
}

type countedFile struct {
	vfs.File
	fs     *countingFS
	closed atomic.Bool
}

func (f *countedFile) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.fs.open.Add(-1)
	}
	return f.File.Close()
}

// Many logs sharing a small pool: while writers and readers run on all of
// them, the files open stay within the bound plus the pins in flight, idle
// files are closed, and a crash followed by recovery under the same bound
// keeps every acknowledged append.
func TestFilePoolBoundsOpenFilesAcrossLogs(t *testing.T) {
	const (
		logs    = 12
		bound   = 3
		writers = 4 // each pins at most one file at a time
	)
	mem := vfs.NewMem()
	cfs := &countingFS{FS: mem}
	pool := NewFilePool(bound, quietLogger())
	cfg := DefaultConfig()
	cfg.ProducerIDExpiration = 0
	cfg.SegmentBytes = 4_000 // several segments per log
	open := func(fs vfs.FS, pool *FilePool) []*Log {
		var ls []*Log
		for i := range logs {
			l, err := Open(fmt.Sprintf("/p%d", i), cfg, Options{FS: fs, Logger: testLogger(t), Files: pool})
			if err != nil {
				t.Fatalf("Open log %d: %v", i, err)
			}
			ls = append(ls, l)
		}
		return ls
	}
	ls := open(cfs, pool)
	if n := cfs.open.Load(); n > bound {
		t.Fatalf("%d files open after opening %d logs, bound %d", n, logs, bound)
	}

	var mu sync.Mutex
	acked := map[[2]int64][]byte{} // (log, base offset) -> batch
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range 150 {
				li := (g + i*5) % logs
				b := mkBatch(t, spec{records: 1 + i%3, ts: int64(i), valueSize: 100 + g})
				res, err := ls[li].Append(b, 0)
				if err != nil {
					t.Errorf("Append to log %d: %v", li, err)
					return
				}
				mu.Lock()
				acked[[2]int64{int64(li), res.BaseOffset}] = b
				mu.Unlock()
				// A read of older data in another log: its segment may
				// have to be reopened while other files are pinned.
				other := ls[(li+1)%logs]
				if end := other.LogEndOffset(); end > 0 {
					if _, err := other.Read(other.LogStartOffset(), 1, end, true); err != nil {
						t.Errorf("Read log %d: %v", (li+1)%logs, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if p := cfs.peak.Load(); p > bound+writers {
		t.Fatalf("peak %d files open, want at most bound %d + %d pins", p, bound, writers)
	}
	if n := cfs.open.Load(); n > bound {
		t.Fatalf("%d files open with nothing in flight, bound %d", n, bound)
	}
	st := pool.Stats()
	if st.Evictions == 0 || st.Open != int(cfs.open.Load()) {
		t.Fatalf("pool stats %+v with %d files open", st, cfs.open.Load())
	}
	segs := 0
	for _, l := range ls {
		segs += l.Segments()
	}
	t.Logf("%d logs, %d segments, peak %d files open (bound %d), %+v", logs, segs, cfs.peak.Load(), bound, st)

	// Crash: the files closed by the pool held acknowledged data that was
	// fsynced through another descriptor; it must all be there.
	crashed := mem.CrashClone()
	for _, l := range ls {
		l.Close()
	}
	if n := cfs.open.Load(); n != 0 {
		t.Fatalf("%d files still open after Close", n)
	}
	ccfs := &countingFS{FS: crashed}
	ls2 := open(ccfs, NewFilePool(bound, quietLogger()))
	if p := ccfs.peak.Load(); p > bound {
		t.Fatalf("recovery of %d logs held %d files open, bound %d", logs, p, bound)
	}
	for li, l := range ls2 {
		got := map[int64][]byte{}
		for _, b := range readAll(t, l) {
			h, _ := batch.ParseHeader(b)
			got[h.BaseOffset] = b
		}
		for k, b := range acked {
			if k[0] == int64(li) && !bytes.Equal(got[k[1]], b) {
				t.Fatalf("log %d: acknowledged batch at %d lost", li, k[1])
			}
		}
		l.Close()
	}
}

// An open that finds the process out of descriptors closes an idle file
// and retries; when nothing helps it fails with ErrNoDescriptors, and the
// log is not damaged: the same append succeeds once descriptors are back.
func TestFilePoolOutOfDescriptors(t *testing.T) {
	cfs := &countingFS{FS: vfs.NewMem()}
	pool := NewFilePool(2, quietLogger())
	var ls []*Log
	for _, dir := range []string{"/a", "/b", "/c"} {
		l, err := Open(dir, testConfig(), Options{FS: cfs, Logger: testLogger(t), Files: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls = append(ls, l)
	}
	a, b, c := ls[0], ls[1], ls[2]
	for _, l := range []*Log{b, a, c} { // b's file is now the one closed
		mustAppend(t, l, mkBatch(t, spec{}), 0)
	}

	// One EMFILE: b's open closes a (the bound) and then c (the EMFILE)
	// and works.
	before := pool.Stats()
	cfs.emfile.Store(1)
	mustAppend(t, b, mkBatch(t, spec{}), 0)
	after := pool.Stats()
	if after.Retries != before.Retries+1 || after.Evictions != before.Evictions+2 {
		t.Fatalf("pool stats before %+v after %+v: want one retry that evicted the last idle file", before, after)
	}

	// Out of descriptors for longer than the retries last: a's file is
	// closed, and reopening it fails.
	cfs.emfile.Store(openAttempts + 10)
	end := a.LogEndOffset()
	_, err := a.Append(mkBatch(t, spec{}), 0)
	if !errors.Is(err, ErrNoDescriptors) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Append out of descriptors: %v, want ErrNoDescriptors wrapping EMFILE", err)
	}
	var se *StorageError
	if !errors.As(err, &se) || se.Path == "" {
		t.Fatalf("Append out of descriptors: %v, want a StorageError naming the file", err)
	}
	if _, err := a.Read(0, 1, end, true); !errors.Is(err, ErrNoDescriptors) {
		t.Fatalf("Read out of descriptors: %v, want ErrNoDescriptors", err)
	}
	cfs.emfile.Store(0)
	if got := a.LogEndOffset(); got != end {
		t.Fatalf("log end %d after a failed open, want %d", got, end)
	}
	res := mustAppend(t, a, mkBatch(t, spec{}), 0)
	if res.BaseOffset != end {
		t.Fatalf("append after descriptors came back at %d, want %d", res.BaseOffset, end)
	}
	if n := len(readAll(t, a)); n != 2 {
		t.Fatalf("read back %d batches, want 2", n)
	}
}

// Logs opened together all start laying preallocated zeros at once; their
// background pins are capped at half the bound, so that the files they
// hold stay bounded, while pins for requests are never refused.
func TestFilePoolCapsBackgroundPins(t *testing.T) {
	const bound = 4
	cfs := &countingFS{FS: vfs.NewMem()}
	pool := NewFilePool(bound, quietLogger())
	var hs []*fileHandle
	for i := range 2 * bound {
		hs = append(hs, &fileHandle{pool: pool, fs: cfs, path: fmt.Sprintf("/f%d", i), flag: os.O_RDWR | os.O_CREATE})
	}
	for i, h := range hs[:bound/2] {
		if _, err := h.acquireBackground(); err != nil {
			t.Fatalf("background pin %d of %d: %v", i+1, bound/2, err)
		}
	}
	if _, err := hs[bound/2].acquireBackground(); !errors.Is(err, errPoolBusy) {
		t.Fatalf("background pin past half the bound: %v, want errPoolBusy", err)
	}
	for i, h := range hs[bound/2:] { // requests pin past the bound
		if _, err := h.acquire(); err != nil {
			t.Fatalf("request pin %d: %v", i, err)
		}
	}
	if n := cfs.open.Load(); n != 2*bound {
		t.Fatalf("%d files open with %d pinned", n, 2*bound)
	}
	for _, h := range hs[bound/2:] {
		h.release()
	}
	hs[0].releaseBackground()
	if _, err := hs[bound/2].acquireBackground(); err != nil {
		t.Fatalf("background pin after one ended: %v", err)
	}
	if n := cfs.open.Load(); n > bound {
		t.Fatalf("%d files open after the request pins ended, bound %d", n, bound)
	}
}
