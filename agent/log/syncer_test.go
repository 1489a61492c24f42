package log

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// heldBatch starts n syncs of files while the Syncer's previous batch is
// still running (the test holds it), so that all n form the next batch,
// then lets it run and returns each sync's error in file order.
func heldBatch(t *testing.T, s *Syncer, files []vfs.File) []error {
	t.Helper()
	s.running.Lock()
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() { errs[i] = s.sync(openFile{f}) })
		// One at a time, so that the first one started is the batch's runner.
		deadline := time.Now().Add(5 * time.Second)
		for {
			s.mu.Lock()
			joined := s.open != nil && len(s.open.files) == i+1
			s.mu.Unlock()
			if joined {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sync %d never joined the batch", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	s.running.Unlock()
	wg.Wait()
	return errs
}

// openFile is a file the test holds open, for the Syncer.
type openFile struct{ vfs.File }

func (f openFile) syncData() error { return vfs.SyncData(f.File) }

func createFiles(t *testing.T, fs vfs.FS, dir string, n int) []vfs.File {
	t.Helper()
	var files []vfs.File
	for i := range n {
		f, err := fs.Create(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if _, err := f.Write([]byte("data")); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestSyncerGroupsConcurrentSyncs: six logs that ask for an fsync while
// another runs are made durable by one syncfs; two are synced file by
// file.
func TestSyncerGroupsConcurrentSyncs(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSyncer(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, err := range heldBatch(t, s, createFiles(t, vfs.Default, dir, 6)) {
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
	}
	if st := s.Stats(); st.GroupSyncs != 1 || st.GroupedFiles != 6 {
		t.Fatalf("six syncs in one batch: %+v, want one syncfs covering six", st)
	}
	for _, err := range heldBatch(t, s, createFiles(t, vfs.Default, t.TempDir(), groupSyncMin-1)) {
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
	}
	if st := s.Stats(); st.GroupSyncs != 1 {
		t.Fatalf("a batch below %d files was synced with syncfs: %+v", groupSyncMin, st)
	}
}

// failingFS is a filesystem syncer whose syncfs fails, as after a
// writeback error somewhere on the filesystem.
type failingFS struct{ calls int }

func (f *failingFS) SyncFS() error { f.calls++; return syscall.EIO }
func (f *failingFS) Close() error  { return nil }

// TestSyncerFallsBackToFileSyncs: a failed syncfs does not say which file
// lost data, so the batch is synced file by file (only the file whose
// own fsync fails gets the error) and syncfs is not used again.
func TestSyncerFallsBackToFileSyncs(t *testing.T) {
	faulty := vfs.NewFaulty(vfs.Default)
	fss := &failingFS{}
	s := &Syncer{fs: fss}
	files := createFiles(t, faulty, t.TempDir(), 5)
	faulty.FailOnce(vfs.OpSync, 0, syscall.EIO)
	errs := heldBatch(t, s, files)
	failed := 0
	for _, err := range errs {
		if err != nil {
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("sync: %v", err)
			}
			failed++
		}
	}
	if failed != 1 || fss.calls != 1 {
		t.Fatalf("after a failed syncfs: %d of 5 syncs failed, syncfs called %d times; want 1 and 1", failed, fss.calls)
	}
	for _, err := range heldBatch(t, s, files) {
		if err != nil {
			t.Fatalf("sync after the fallback: %v", err)
		}
	}
	if fss.calls != 1 {
		t.Fatalf("syncfs called again after it failed (%d calls)", fss.calls)
	}
}

// TestSyncerPrefersTheCheaperWay: a batch is synced with syncfs only while
// that has cost less per file than fsyncs (a busy neighbour on the
// filesystem makes syncfs slow).
func TestSyncerPrefersTheCheaperWay(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSyncer(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	files := createFiles(t, vfs.Default, dir, 5)
	s.costs[viaFS] = recentCosts{last: [5]float64{1, 1, 1}, n: 3}
	s.costs[viaFiles] = recentCosts{last: [5]float64{1e-9, 1e-9, 1e-9}, n: 3}
	heldBatch(t, s, files)
	if st := s.Stats(); st.GroupSyncs != 0 {
		t.Fatalf("syncfs used while fsyncs were cheaper: %+v", st)
	}
	s.costs[viaFS], s.costs[viaFiles] = s.costs[viaFiles], s.costs[viaFS]
	heldBatch(t, s, files)
	if st := s.Stats(); st.GroupSyncs != 1 {
		t.Fatalf("syncfs not used while it was cheaper: %+v", st)
	}
}
