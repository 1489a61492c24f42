package vfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// WriteBehind queues every whole window once, in order, and waits for
// each window only after the next one is queued, so that at most about
// two windows are dirty at any time.
func TestWriteBehindRanges(t *testing.T) {
	var calls []string
	defer func(s, a func(*os.File, int64, int64) error) { startWriteback, awaitWriteback = s, a }(startWriteback, awaitWriteback)
	startWriteback = func(_ *os.File, off, n int64) error {
		calls = append(calls, fmt.Sprintf("start %d+%d", off, n))
		return nil
	}
	awaitWriteback = func(_ *os.File, off, n int64) error {
		calls = append(calls, fmt.Sprintf("await %d+%d", off, n))
		return nil
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "obj"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriteBehind(f, 64, 100)
	for _, n := range []int{60, 60, 0, 250, 29} { // 60, 120, 120, 370, 399
		if _, err := w.Write(make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"start 64+100",                  // at 120
		"start 164+100", "await 64+100", // at 370
		"start 264+100", "await 164+100",
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("calls %q, want %q", calls, want)
	}
}

// On a real file the calls succeed and the bytes are all there.
func TestWriteBehindRealFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "obj"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriteBehind(f, 0, 1<<16)
	chunk := make([]byte, 40_000)
	for range 10 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		w.Wrote(int64(len(chunk)))
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != 400_000 {
		t.Fatalf("size %v, %v", st, err)
	}
}
