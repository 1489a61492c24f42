package vfs

import (
	"os"
	"path/filepath"
	"testing"
)

// countCalls makes *call count its calls into *n while still making them,
// until the test ends.
func countCalls(t *testing.T, call *func(fd int) error, n *int) {
	orig := *call
	*call = func(fd int) error {
		*n++
		return orig(fd)
	}
	t.Cleanup(func() { *call = orig })
}

// TestSyncData: SyncData of an OS file is one fdatasync, not the fsync of
// its Sync (which would pass every check of durability a test can make
// without a power cut, so the call itself is what is checked).
func TestSyncData(t *testing.T) {
	var calls int
	countCalls(t, &fdatasync, &calls)
	f, err := Default.Create(filepath.Join(t.TempDir(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := SyncData(f); err != nil {
		t.Fatalf("SyncData of an OS file: %v", err)
	}
	if calls != 1 {
		t.Fatalf("SyncData made %d fdatasync calls, want 1", calls)
	}
	f.Close()
	if err := SyncData(f); err == nil {
		t.Fatal("SyncData of a closed file succeeded")
	}
}

// TestFSSyncer: on Linux the OS filesystem has a syncer and it calls
// syncfs; a memory filesystem has none.
func TestFSSyncer(t *testing.T) {
	var calls int
	countCalls(t, &syncfs, &calls)
	s, err := OpenFSSyncer(Default, t.TempDir())
	if err != nil || s == nil {
		t.Fatalf("OpenFSSyncer on Linux = %v, %v; want a syncer", s, err)
	}
	defer s.Close()
	if err := s.SyncFS(); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("SyncFS made %d syncfs calls, want 1", calls)
	}
	if m, err := OpenFSSyncer(NewMem(), "/"); m != nil || err != nil {
		t.Fatalf("OpenFSSyncer on a memory FS = %v, %v; want nil, nil", m, err)
	}
	if _, err := OpenFSSyncer(Default, filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Fatalf("OpenFSSyncer of a missing dir: %v", err)
	}
}
