package log

import (
	"bytes"
	"os"
	"testing"

	"github.com/strata-streaming/strata/internal/vfs"
)

// fileSizes returns each segment's file size and data size.
func fileSizes(t *testing.T, l *Log) (files, data []int64) {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segs {
		st, err := os.Stat(s.logPath())
		if err != nil {
			t.Fatal(err)
		}
		files, data = append(files, st.Size()), append(data, s.size)
	}
	return files, data
}

// TestPreallocation: the active segment's file is laid with zeros ahead of
// its data, every batch reads back as written, sealed segments and a
// closed log are cut back to their data, and the log reopens clean.
func TestPreallocation(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.ProducerIDExpiration = 0
	cfg.SegmentBytes = 256 << 10
	l, err := Open(dir, cfg, Options{FS: vfs.Default, Logger: testLogger(t), Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for i := range 600 {
		b := mkBatch(t, spec{ts: int64(i), valueSize: 1000})
		mustAppend(t, l, b, 0)
		want = append(want, b)
		if i == 0 {
			waitFor(t, "zeros ahead of the first batch", func() bool {
				files, data := fileSizes(t, l)
				return files[0] > data[0]
			})
		}
	}
	files, data := fileSizes(t, l)
	if len(files) < 3 {
		t.Fatalf("%d segments, want a few sealed ones", len(files))
	}
	for i := range len(files) - 1 {
		if files[i] != data[i] {
			t.Fatalf("sealed segment %d: file of %d bytes for %d bytes of batches", i, files[i], data[i])
		}
	}
	check := func(l *Log) {
		t.Helper()
		got := readAll(t, l)
		if len(got) != len(want) {
			t.Fatalf("%d batches read, %d appended", len(got), len(want))
		}
		for i := range got {
			// Offsets and epochs were stamped into want in place.
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("batch %d differs from what was appended", i)
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	active := l.segs[len(l.segs)-1]
	if st, err := os.Stat(active.logPath()); err != nil || st.Size() != active.size {
		t.Fatalf("closed log's active segment: %v, %v bytes for %d bytes of batches", err, st.Size(), active.size)
	}
	l2, err := Open(dir, cfg, Options{FS: vfs.Default, Logger: testLogger(t), Preallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	check(l2)
}
