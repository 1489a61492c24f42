package objstore_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/objstore/objstoretest"
)

func newFS(t *testing.T) objstore.Bucket {
	b, err := objstore.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestFSAcceptance(t *testing.T) {
	objstoretest.Run(t, newFS)
}

// A second bucket on the same directory (as another process would open it)
// sees the first one's objects and ETags.
func TestFSReopen(t *testing.T) {
	dir := t.TempDir()
	b1, err := objstore.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b1.Close()
	etag, err := b1.Put(t.Context(), "a/b", []byte("persisted"), objstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := objstore.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	data, attrs, err := b2.Get(t.Context(), "a/b")
	if err != nil || string(data) != "persisted" || attrs.ETag != etag {
		t.Fatalf("reopened Get = %q %+v %v, want ETag %q", data, attrs, err, etag)
	}
	if _, err := b2.Put(t.Context(), "a/b", []byte("x"), objstore.PutOptions{IfMatch: etag}); err != nil {
		t.Fatalf("CAS through the second bucket: %v", err)
	}
}

// The fs ETag is a per-Put version id, so it changes even when the content
// does not.
func TestFSETagChangesOnIdenticalContent(t *testing.T) {
	b := newFS(t)
	e1, err := b.Put(t.Context(), "k", []byte("same"), objstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := b.Put(t.Context(), "k", []byte("same"), objstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e1 == e2 {
		t.Fatalf("two Puts gave ETag %q", e1)
	}
}

// A writer that crashed after creating its temp file leaves it behind; it
// must never show as an object, and must not disturb the real one.
func TestFSLeftoverTempFileIsInvisible(t *testing.T) {
	dir := t.TempDir()
	b, err := objstore.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Put(t.Context(), "p/obj", []byte("real"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// What a crash between create and rename leaves: a half-written temp
	// file in the object's directory, and one in a directory of its own.
	for _, p := range []string{"p/.strata-tmp-123456", "q/.strata-tmp-999"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("STOB\x01 half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	if err := b.List(t.Context(), "", func(k string, _ objstore.Attributes) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"p/obj"}) {
		t.Fatalf("List = %q, want only p/obj", keys)
	}
	if _, _, err := b.Get(t.Context(), "p/.strata-tmp-123456"); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Fatalf("Get of a temp file name: %v, want ErrInvalidKey", err)
	}
	if data, _, err := b.Get(t.Context(), "p/obj"); err != nil || string(data) != "real" {
		t.Fatalf("Get(p/obj) = %q, %v", data, err)
	}
}

// Bytes changed on disk are reported as corruption, not returned.
func TestFSDetectsCorruption(t *testing.T) {
	dir := t.TempDir()
	b, err := objstore.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Put(t.Context(), "c/flip", []byte("some content"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(t.Context(), "c/short", []byte("some content"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	flip := filepath.Join(dir, "c", "flip")
	raw, err := os.ReadFile(flip)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1] ^= 1
	if err := os.WriteFile(flip, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "c", "short"), 70); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(t.Context(), "c/flip"); !objstore.IsCorrupt(err) {
		t.Fatalf("Get of a flipped byte: %v, want corruption", err)
	}
	var ce *objstore.CorruptObjectError
	if _, err := b.Stat(t.Context(), "c/short"); !errors.As(err, &ce) || ce.Key != "c/short" {
		t.Fatalf("Stat of a truncated file: %v, want a CorruptObjectError for c/short", err)
	}
}

func TestFSKeyConflicts(t *testing.T) {
	b := newFS(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "a/b", []byte("x"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "a", []byte("y"), objstore.PutOptions{}); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("Put of a key that is a prefix: %v", err)
	}
	if _, err := b.Put(ctx, "a/b/c", []byte("y"), objstore.PutOptions{}); err == nil || !strings.Contains(err.Error(), "object") {
		t.Fatalf("Put under an object: %v", err)
	}
	if err := b.Delete(ctx, "a"); err != nil {
		t.Fatalf("Delete of a prefix: %v", err)
	}
	if _, err := b.Put(ctx, strings.Repeat("n", objstore.FSMaxNameBytes+1), nil, objstore.PutOptions{}); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Fatalf("over-long element: %v", err)
	}
}

func TestFSClosed(t *testing.T) {
	b, err := objstore.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	if _, _, err := b.Get(t.Context(), "k"); !errors.Is(err, objstore.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
}

const (
	casChildDirEnv = "STRATA_OBJSTORE_CAS_CHILD_DIR"
	casChildIncr   = 25
	casChildren    = 3
)

// TestFSCrossProcessCAS runs this test binary as several child processes,
// each incrementing one counter in a shared directory with CAS. Without the
// cross-process lock, check-then-rename races would lose increments.
func TestFSCrossProcessCAS(t *testing.T) {
	if dir := os.Getenv(casChildDirEnv); dir != "" {
		casChild(t, dir)
		return
	}
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, casChildren)
	outs := make([]*bytes.Buffer, casChildren)
	for i := range cmds {
		outs[i] = new(bytes.Buffer)
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFSCrossProcessCAS$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), casChildDirEnv+"="+dir)
		cmd.Stdout, cmd.Stderr = outs[i], outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i])
		}
	}
	if t.Failed() {
		return
	}
	b, err := objstore.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := objstoretest.ReadCounter(t.Context(), b, "shared/counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(casChildren * casChildIncr); got != want {
		t.Fatalf("counter = %d, want %d: an update was lost across processes", got, want)
	}
}

func casChild(t *testing.T, dir string) {
	b, err := objstore.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	attempts := 0
	for range casChildIncr {
		n, err := objstoretest.CASIncrement(t.Context(), b, "shared/counter", 10000)
		attempts += n
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Log("child pid " + strconv.Itoa(os.Getpid()) + " attempts " + strconv.Itoa(attempts))
}

// Puts and Deletes racing in one directory: a Delete prunes the directory
// when it looks empty, and a Put must recreate it rather than fail.
func TestFSPutDeleteRaceInOneDirectory(t *testing.T) {
	b := newFS(t)
	ctx := t.Context()
	const workers, rounds = 4, 50
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := "race/dir/k" + strconv.Itoa(w)
			for range rounds {
				if _, err := b.Put(ctx, key, []byte("v"), objstore.PutOptions{}); err != nil {
					errs <- err
					return
				}
				if err := b.Delete(ctx, key); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := b.List(ctx, "", func(k string, _ objstore.Attributes) error {
		return errors.New("left over: " + k)
	}); err != nil {
		t.Fatal(err)
	}
}

// A PutReader whose reader fails part way removes its temp file.
func TestFSPutReaderFailureLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	b, err := objstore.NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	short := strings.NewReader(strings.Repeat("x", 3<<20))
	if _, err := b.PutReader(t.Context(), "seg/big.log", short, 4<<20, objstore.PutOptions{}); err == nil {
		t.Fatal("PutReader from a short reader succeeded")
	}
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), objstore.ReservedPrefix+"tmp-") {
			t.Errorf("temp file left behind: %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
