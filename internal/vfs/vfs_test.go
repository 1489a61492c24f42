package vfs

import (
	"bytes"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// exercise runs the same script against any FS, so MemFS is held to the
// behaviour of the operating system.
func exercise(t *testing.T, fs FS, dir string) {
	t.Helper()
	sub := filepath.Join(dir, "a", "b")
	if err := fs.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(sub, "f")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello ")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("world"), 6); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 20)
	n, err := f.ReadAt(buf, 0)
	if n != 11 || !errors.Is(err, io.EOF) || string(buf[:n]) != "hello world" {
		t.Fatalf("ReadAt = %d %v %q", n, err, buf[:n])
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 5 {
		t.Fatalf("Stat = %v %v", st, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename(name, filepath.Join(sub, "g")); err != nil {
		t.Fatal(err)
	}
	names, err := fs.ReadDir(sub)
	if err != nil || !slices.Equal(names, []string{"g"}) {
		t.Fatalf("ReadDir = %v %v", names, err)
	}
	if _, err := fs.Stat(name); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("Stat of renamed = %v", err)
	}
	b, err := ReadFile(fs, filepath.Join(sub, "g"), 100)
	if err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile = %q %v", b, err)
	}
	if _, err := ReadFile(fs, filepath.Join(sub, "g"), 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over limit = %v", err)
	}
	if err := WriteFileAtomic(fs, sub, filepath.Join(sub, "g"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := ReadFile(fs, filepath.Join(sub, "g"), 100); string(b) != "new" {
		t.Fatalf("after WriteFileAtomic %q", b)
	}
	if err := fs.Truncate(filepath.Join(sub, "g"), 1); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir(sub); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(filepath.Join(sub, "g")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Open(filepath.Join(sub, "g")); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("Open removed = %v", err)
	}
}

func TestOS(t *testing.T)  { exercise(t, Default, t.TempDir()) }
func TestMem(t *testing.T) { exercise(t, NewMem(), "/data") }

func TestCrashCloneKeepsOnlySynced(t *testing.T) {
	m := NewMem()
	if err := m.MkdirAll("/d", 0o755); err != nil {
		t.Fatal(err)
	}
	f, _ := m.Create("/d/x")
	f.Write([]byte("durable"))
	f.Sync()
	f.Write([]byte(" lost"))
	g, _ := m.Create("/d/never-synced")
	g.Write([]byte("gone"))

	c := m.CrashClone()
	if b, _ := ReadFile(c, "/d/x", 100); string(b) != "durable" {
		t.Fatalf("x after crash = %q", b)
	}
	if b, err := ReadFile(c, "/d/never-synced", 100); err != nil || len(b) != 0 {
		t.Fatalf("never-synced after crash = %q %v", b, err)
	}
	// The original is untouched.
	if b, _ := ReadFile(m, "/d/x", 100); string(b) != "durable lost" {
		t.Fatalf("original = %q", b)
	}
}

func TestFaultyFailAfter(t *testing.T) {
	m := NewMem()
	fs := NewFaulty(m)
	f, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	fs.FailAfter(OpWrite, 2, syscall.ENOSPC)
	fs.SetShortWrites(true)
	for i := 0; i < 2; i++ {
		if _, err := f.Write([]byte("ab")); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for i := 0; i < 3; i++ { // sticky: a full disk stays full
		n, err := f.WriteAt([]byte("cdef"), 4)
		if !errors.Is(err, syscall.ENOSPC) || n != 2 {
			t.Fatalf("write after limit: %d %v", n, err)
		}
	}
	fs.Clear()
	if _, err := f.WriteAt([]byte("zz"), 0); err != nil {
		t.Fatal(err)
	}
	if got := fs.Count(OpWrite); got != 6 {
		t.Fatalf("Count = %d", got)
	}
	b, _ := ReadFile(m, "/f", 100)
	if !bytes.Equal(b, []byte("zzabcd")) {
		t.Fatalf("content %q", b)
	}
}

func TestFaultyFailOnce(t *testing.T) {
	fs := NewFaulty(NewMem())
	f, _ := fs.Create("/f")
	fs.FailOnce(OpSync, 1, syscall.EIO)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("second sync = %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("third sync = %v", err)
	}
	fs.FailOnce(OpCreate, 0, syscall.ENOSPC)
	if _, err := fs.Create("/g"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("create = %v", err)
	}
	fs.FailOnce(OpRename, 0, syscall.EIO)
	if err := fs.Rename("/f", "/h"); !errors.Is(err, syscall.EIO) {
		t.Fatalf("rename = %v", err)
	}
	fs.FailOnce(OpTruncate, 0, syscall.EIO)
	if err := f.Truncate(0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("truncate = %v", err)
	}
}

// TestFaultyDelay: with a delay set, a write or read takes at least that
// long and still does its work; each kind of operation has its own delay,
// in force while it is set.
func TestFaultyDelay(t *testing.T) {
	const d = 30 * time.Millisecond
	fs := NewFaulty(NewMem())
	f, _ := fs.Create("/f")
	took := func(op func() error) time.Duration {
		t.Helper()
		start := time.Now()
		if err := op(); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	fs.SetDelay(OpWrite, d)
	for _, write := range []func() error{
		func() error { _, err := f.Write([]byte("ab")); return err },
		func() error { _, err := f.WriteAt([]byte("cd"), 2); return err },
	} {
		if took := took(write); took < d {
			t.Fatalf("a write with a %v delay took %v", d, took)
		}
	}
	fs.SetDelay(OpWrite, 0)
	fs.SetDelay(OpRead, d)
	if _, err := f.WriteAt([]byte("e"), 4); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if took := took(func() error { _, err := f.ReadAt(got, 0); return err }); took < d {
		t.Fatalf("a read with a %v delay took %v", d, took)
	}
	if string(got) != "abcde" {
		t.Fatalf("read %q; want the delayed writes stored", got)
	}
	if w, r := fs.Count(OpWrite), fs.Count(OpRead); w != 3 || r != 1 {
		t.Fatalf("%d writes and %d reads counted, want 3 and 1", w, r)
	}
}

// TestSyncDataFaulty: SyncData syncs a File that is not an OS file with
// its Sync, so that Faulty still sees (and can fail) the sync. Which call
// an OS file gets is checked per OS (sync_linux_test.go).
func TestSyncDataFaulty(t *testing.T) {
	faulty := NewFaulty(Default)
	g, err := faulty.Create(t.TempDir() + "/b")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	faulty.FailOnce(OpSync, 0, syscall.EIO)
	if err := SyncData(g); !errors.Is(err, syscall.EIO) {
		t.Fatalf("SyncData of a failing file: %v, want EIO", err)
	}
}

// TestStatDisk: the data directory's filesystem has a size, and no more
// of it free than that.
func TestStatDisk(t *testing.T) {
	ds, err := StatDisk(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Total == 0 || ds.Free > ds.Total {
		t.Fatalf("StatDisk = %+v", ds)
	}
	if _, err := StatDisk(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("StatDisk of a missing path: %v", err)
	}
}

// TestTryLock: a second open of a locked file cannot lock it until the
// first closes.
func TestTryLock(t *testing.T) {
	name := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	first, second := open(), open()
	if err := TryLock(first); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	if err := TryLock(second); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock while the first holds it: %v, want ErrLocked", err)
	}
	first.Close()
	if err := TryLock(second); err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
}
