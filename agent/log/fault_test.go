package log

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval, not synchronisation
	}
}

func TestTornTail(t *testing.T) {
	rng := seeded(t)
	for trial := 0; trial < 40; trial++ {
		mem := vfs.NewMem()
		cfg := testConfig()
		cfg.SegmentBytes = 8000
		cfg.IndexIntervalBytes = 500
		l := openLog(t, mem, "/p", cfg, nil)
		var bs [][]byte
		// At least 60 batches, and at least 5 in the active segment.
		for i := 0; i < 60 || l.active().next-l.active().base < 5; i++ {
			if i > 1000 {
				t.Fatal("active segment never fills")
			}
			b := mkBatch(t, spec{records: 1, ts: int64(i), valueSize: 1 + rng.IntN(200)})
			mustAppend(t, l, b, 1)
			bs = append(bs, b)
		}
		active := l.active()
		base, segSize := active.base, active.size
		abandon(l)

		// Batches of the active segment, with their positions.
		var spans []span
		pos := 0
		for i, b := range bs {
			if h, _ := batch.ParseHeader(b); h.BaseOffset < base {
				continue
			}
			spans = append(spans, span{i, pos, pos + len(b)})
			pos += len(b)
		}
		if int64(pos) != segSize || len(spans) < 3 {
			t.Fatalf("trial %d: active segment %d bytes, %d batches", trial, segSize, len(spans))
		}
		cut := rng.IntN(pos + 1)
		flips := rng.IntN(3)
		var flipAt []int
		f, _ := mem.OpenFile("/p/"+segmentName(base)+logSuffix, os.O_RDWR, 0)
		for k := 0; k < flips; k++ {
			p := rng.IntN(pos)
			// The base offset and the partition leader epoch are outside
			// the CRC by design (Kafka's format). A base offset flipped
			// upwards reads as a gap, which a compacted log has, so
			// recovery cannot tell it from one, as Kafka's cannot.
			if rel := p - spansStart(spans, p); rel < 8 || rel >= 12 && rel < 16 {
				continue
			}
			one := []byte{0}
			f.ReadAt(one, int64(p))
			one[0] ^= byte(1 + rng.IntN(255))
			f.WriteAt(one, int64(p))
			flipAt = append(flipAt, p)
		}
		f.Truncate(int64(cut))
		f.Close()

		// Expected: every batch of the active segment wholly before the cut
		// and before the first damaged batch, and nothing after.
		wantN := 0
		for _, s := range spans {
			damaged := s.end > cut
			for _, p := range flipAt {
				damaged = damaged || (p >= s.start && p < s.end)
			}
			if damaged {
				break
			}
			wantN++
		}
		want := bs[:spans[0].i+wantN]

		l = openLog(t, mem, "/p", cfg, nil)
		got := readAll(t, l)
		if len(got) != len(want) {
			t.Fatalf("trial %d (cut %d of %d, flips %v): recovered %d batches, want %d", trial, cut, pos, flipAt, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("trial %d: batch %d differs", trial, i)
			}
		}
		wantEnd := base
		if len(want) > 0 {
			h, _ := batch.ParseHeader(want[len(want)-1])
			wantEnd = max(base, h.NextOffset())
		}
		if l.LogEndOffset() != wantEnd {
			t.Fatalf("trial %d: end %d, want %d", trial, l.LogEndOffset(), wantEnd)
		}
		if res := mustAppend(t, l, mkBatch(t, spec{}), 1); res.BaseOffset != wantEnd {
			t.Fatalf("trial %d: append after recovery at %d, want %d", trial, res.BaseOffset, wantEnd)
		}
		l.Close()
	}
}

// span is batch i of a test, at file positions [start, end).
type span struct{ i, start, end int }

// spansStart returns the start of the batch holding position p.
func spansStart(spans []span, p int) int {
	for _, s := range spans {
		if p >= s.start && p < s.end {
			return s.start
		}
	}
	return 0
}

func TestCrashKeepsAcknowledgedAppends(t *testing.T) {
	rng := seeded(t)
	for round := 0; round < 5; round++ {
		mem := vfs.NewMem()
		cfg := DefaultConfig()
		cfg.ProducerIDExpiration = 0
		cfg.SegmentBytes = 20_000
		// Odd rounds preallocate: the zeros must never cover a batch,
		// and recovery must drop the ones past the last. Some rounds
		// bound the open files to 1 or 2, so that files are closed and
		// reopened between appends, fsyncs and preallocation.
		l, err := Open("/p", cfg, Options{FS: mem, Logger: testLogger(t), Preallocate: round%2 == 1,
			Files: NewFilePool(round%3, quietLogger())})
		if err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		acked := map[int64][]byte{} // base offset -> batch, after Append returned
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					b := mkBatch(t, spec{records: 1 + i%3, ts: int64(i), valueSize: 50 + g})
					res, err := l.Append(b, 0)
					if errors.Is(err, ErrClosed) {
						return
					}
					if err != nil {
						t.Errorf("Append: %v", err)
						return
					}
					mu.Lock()
					acked[res.BaseOffset] = b
					mu.Unlock()
				}
			}(g)
		}
		target := 50 + rng.IntN(400)
		waitFor(t, "acknowledged appends", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(acked) >= target
		})
		// Everything acknowledged before the crash must survive it.
		mu.Lock()
		mustSurvive := make(map[int64][]byte, len(acked))
		for k, v := range acked {
			mustSurvive[k] = v
		}
		mu.Unlock()
		crashed := mem.CrashClone()
		close(stop)
		wg.Wait()
		l.Close()

		l2 := openLog(t, crashed, "/p", cfg, nil)
		got := map[int64][]byte{}
		for _, b := range readAll(t, l2) {
			h, _ := batch.ParseHeader(b)
			got[h.BaseOffset] = b
		}
		for off, b := range mustSurvive {
			if !bytes.Equal(got[off], b) {
				t.Fatalf("round %d: acknowledged batch at %d lost (%d acked, %d recovered)", round, off, len(mustSurvive), len(got))
			}
		}
		res := mustAppend(t, l2, mkBatch(t, spec{}), 0)
		if res.BaseOffset != l2.LogEndOffset()-1 {
			t.Fatalf("append after crash: %+v", res)
		}
		l2.Close()
	}
}

func TestFullDisk(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewFaulty(mem)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3000
	cfg.ProducerIDExpiration = 0
	l := openLog(t, fs, "/p", cfg, nil)
	var bs [][]byte
	for i := 0; i < 20; i++ {
		b := mkBatch(t, spec{ts: int64(i), valueSize: 100})
		mustAppend(t, l, b, 0)
		bs = append(bs, b)
	}
	leo, size := l.LogEndOffset(), l.Size()
	fs.SetShortWrites(true)
	for n := 0; n < 3; n++ {
		fs.FailAfter(vfs.OpWrite, n, syscall.ENOSPC)
		for i := 0; i < 3; i++ {
			_, err := l.Append(mkBatch(t, spec{valueSize: 100}), 0)
			var se *StorageError
			if err != nil && (!errors.As(err, &se) || !errors.Is(err, ErrStorage) || !errors.Is(err, syscall.ENOSPC)) {
				t.Fatalf("full disk: %v", err)
			}
		}
		// Nothing partial is visible and reads return all earlier data.
		got := readAll(t, l)
		for i := range bs {
			if !bytes.Equal(got[i], bs[i]) {
				t.Fatalf("batch %d differs on a full disk", i)
			}
		}
		fs.Clear()
		// Appends that went through before the disk filled are real batches.
		bs = got
		leo, size = l.LogEndOffset(), l.Size()
		st, _ := mem.Stat("/p/" + segmentName(l.active().base) + logSuffix)
		if st.Size() != l.active().size {
			t.Fatalf("partial write left on disk: file %d, segment %d", st.Size(), l.active().size)
		}
	}
	res := mustAppend(t, l, mkBatch(t, spec{valueSize: 100}), 0)
	if res.BaseOffset != leo || l.Size() <= size {
		t.Fatalf("after the disk cleared: %+v (end was %d)", res, leo)
	}
	l.Close()
	l = openLog(t, mem, "/p", cfg, nil)
	if got := readAll(t, l); len(got) != len(bs)+1 {
		t.Fatalf("after reopen %d batches, want %d", len(got), len(bs)+1)
	}
	l.Close()
}

func TestUndoFailsLogRefusesWrites(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewFaulty(mem)
	l := openLog(t, fs, "/p", testConfig(), nil)
	first := mkBatch(t, spec{})
	mustAppend(t, l, first, 0)
	fs.SetShortWrites(true)
	fs.FailAfter(vfs.OpWrite, 0, syscall.ENOSPC)
	fs.FailAfter(vfs.OpTruncate, 0, syscall.EIO)
	if _, err := l.Append(mkBatch(t, spec{valueSize: 500}), 0); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append: %v", err)
	}
	fs.Clear()
	if _, err := l.Append(mkBatch(t, spec{}), 0); !errors.Is(err, ErrFailed) || !errors.Is(err, ErrStorage) {
		t.Fatalf("append on failed log: %v", err)
	}
	if got, err := l.Read(0, 1000, 10, true); err != nil || !bytes.Equal(got, first) {
		t.Fatalf("read on failed log: %d bytes %v", len(got), err)
	}
	l.Close()
	if _, err := mem.Stat("/p/" + cleanFileName); err == nil {
		t.Fatal("failed log wrote the clean mark")
	}
	l = openLog(t, mem, "/p", testConfig(), nil)
	defer l.Close()
	if got := readAll(t, l); len(got) != 1 || !bytes.Equal(got[0], first) {
		t.Fatalf("recovered %d batches", len(got))
	}
	if res := mustAppend(t, l, mkBatch(t, spec{}), 0); res.BaseOffset != 1 {
		t.Fatalf("append after recovery: %+v", res)
	}
}

func TestFsyncFailureRollsBack(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewFaulty(mem)
	cfg := DefaultConfig()
	cfg.ProducerIDExpiration = 0
	l := openLog(t, fs, "/p", cfg, nil)
	defer l.Close()
	for i := int32(0); i < 5; i++ {
		mustAppend(t, l, mkBatch(t, spec{pid: 4, seq: i}), 0)
	}
	fs.FailOnce(vfs.OpSync, 0, syscall.EIO)
	if _, err := l.Append(mkBatch(t, spec{pid: 4, seq: 5}), 0); !errors.Is(err, syscall.EIO) || !errors.Is(err, ErrStorage) {
		t.Fatalf("append with failing fsync: %v", err)
	}
	if l.LogEndOffset() != 5 || l.FlushedOffset() != 5 {
		t.Fatalf("end %d flushed %d after failed fsync", l.LogEndOffset(), l.FlushedOffset())
	}
	if b, err := l.Read(5, 1000, 100, true); b != nil || err != nil {
		t.Fatalf("failed batch readable: %d bytes %v", len(b), err)
	}
	// The producer's retry is a new append (not a duplicate) at the same offset.
	res, err := l.Append(mkBatch(t, spec{pid: 4, seq: 5}), 0)
	if err != nil || res.Duplicate || res.BaseOffset != 5 {
		t.Fatalf("retry: %+v %v", res, err)
	}
}

// gateFS blocks the first armed Sync until released.
type gateFS struct {
	vfs.FS
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
}

type gateFile struct {
	vfs.File
	g *gateFS
}

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, logSuffix) {
		return f, nil // only segment fsyncs are gated
	}
	return &gateFile{File: f, g: g}, nil
}

func (g *gateFS) Create(name string) (vfs.File, error) {
	return g.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

func (g *gateFS) Open(name string) (vfs.File, error) { return g.OpenFile(name, os.O_RDONLY, 0) }

func (f *gateFile) Sync() error {
	f.g.mu.Lock()
	armed := f.g.armed
	f.g.armed = false
	f.g.mu.Unlock()
	if armed {
		close(f.g.entered)
		<-f.g.release
	}
	return f.File.Sync()
}

func TestGroupCommitSharesFsyncs(t *testing.T) {
	g := &gateFS{FS: vfs.NewMem(), entered: make(chan struct{}), release: make(chan struct{})}
	l := openLog(t, g, "/p", DefaultConfig(), nil)
	defer l.Close()
	mustAppend(t, l, mkBatch(t, spec{}), 0) // records epoch 0 first
	before := l.Stats()
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()

	const waiters = 8
	errs := make(chan error, waiters+1)
	go func() { _, err := l.Append(mkBatch(t, spec{}), 0); errs <- err }()
	<-g.entered // the first append is inside its fsync
	entered := time.Now()
	for i := 0; i < waiters; i++ {
		go func() { _, err := l.Append(mkBatch(t, spec{}), 0); errs <- err }()
	}
	waitFor(t, "all appends written", func() bool { return l.Stats().Appends-before.Appends == waiters+1 })
	held := time.Since(entered)
	close(g.release)
	for i := 0; i < waiters+1; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// One fsync for the first append, one shared by the eight behind it.
	if n := l.Stats().Fsyncs - before.Fsyncs; n != 2 {
		t.Fatalf("%d fsyncs for %d appends, want 2", n, waiters+1)
	}
	// The first fsync was held at least this long, and FsyncTime counts it.
	if d := l.Stats().FsyncTime - before.FsyncTime; d < held {
		t.Fatalf("FsyncTime grew %v while an fsync was held %v", d, held)
	}
	if l.FlushedOffset() != waiters+2 {
		t.Fatalf("flushed %d", l.FlushedOffset())
	}
}

func TestIntervalFlush(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Flush, cfg.FlushInterval = FlushInterval, time.Millisecond
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	mustAppend(t, l, mkBatch(t, spec{}), 0)
	waitFor(t, "interval flush", func() bool { return l.FlushedOffset() == 1 })
	cfg.Flush = FlushNever
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, mkBatch(t, spec{}), 0)
	if l.FlushedOffset() != 1 {
		t.Fatalf("never-flush log flushed to %d", l.FlushedOffset())
	}
	if err := l.Sync(); err != nil || l.FlushedOffset() != 2 {
		t.Fatalf("Sync: %v, flushed %d", err, l.FlushedOffset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
