package diskless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

func TestCutByInterval(t *testing.T) {
	cfg := testConfig()
	cfg.CommitInterval = 100 * time.Millisecond
	c := newFakeCommitter()
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), c)

	start := time.Now()
	first := add(t, w, topicA, 0, testBatch(t, -1, 0, "one"))
	second := add(t, w, topicA, 0, testBatch(t, -1, 0, "two"))
	committed(t, first)
	committed(t, second)
	if took := time.Since(start); took < cfg.CommitInterval {
		t.Fatalf("answered after %v, before the commit interval %v", took, cfg.CommitInterval)
	}
	objs := c.objects()
	if len(objs) != 1 || len(objs[0].Batches) != 2 {
		t.Fatalf("committed %d objects (%v), want one of both batches", len(objs), objs)
	}
	// The next batch starts a new interval.
	third := add(t, w, topicA, 0, testBatch(t, -1, 0, "three"))
	if off := committed(t, third); off != 2 {
		t.Fatalf("third batch at offset %d, want 2", off)
	}
	if n := len(c.objects()); n != 2 {
		t.Fatalf("%d objects, want 2", n)
	}
}

func TestCutByBytes(t *testing.T) {
	b := testBatch(t, -1, 0, "payload")
	cfg := testConfig()
	cfg.CommitBytes = 3 * int64(len(b))
	c := newFakeCommitter()
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), c)

	var waits []func(context.Context) (Result, error)
	for range 3 {
		waits = append(waits, add(t, w, topicA, 1, b))
	}
	for i, wait := range waits {
		if off := committed(t, wait); off != int64(i) {
			t.Fatalf("batch %d at offset %d", i, off)
		}
	}
	add(t, w, topicA, 1, b) // a fourth stays buffered for the hour
	objs := c.objects()
	if len(objs) != 1 || len(objs[0].Batches) != 3 {
		t.Fatalf("%d objects, want one of 3 batches", len(objs))
	}
	if n := w.bufferedBatches(); n != 1 {
		t.Fatalf("%d batches buffered, want 1", n)
	}
}

// TestLargeBatchCutAlone: a batch that would take the buffer past
// CommitBytes starts a new object, and one larger than CommitBytes is an
// object by itself.
func TestLargeBatchCutAlone(t *testing.T) {
	small := testBatch(t, -1, 0, "s")
	large := testBatch(t, -1, 0, strings.Repeat("L", 3000))
	cfg := testConfig()
	cfg.CommitBytes = 1000
	c := newFakeCommitter()
	bucket := objstore.NewMem()
	w, _ := newTestWriter(t, cfg, bucket, c)

	s1 := add(t, w, topicA, 0, small)
	l := add(t, w, topicA, 0, large)
	committed(t, s1)
	committed(t, l)
	add(t, w, topicA, 0, small) // buffered
	objs := c.objects()
	if len(objs) != 2 || len(objs[0].Batches) != 1 || len(objs[1].Batches) != 1 || objs[1].Batches[0].Size != int32(len(large)) {
		t.Fatalf("objects %v, want [small] then [large]", objs)
	}
	if n := len(storedObjects(t, bucket)); n != 2 {
		t.Fatalf("%d objects stored, want 2", n)
	}
}

// TestObjectLayout writes interleaved batches of several partitions into
// one object in an fs bucket and reads it back as a reader would.
func TestObjectLayout(t *testing.T) {
	bucket, err := objstore.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	c := newFakeCommitter()
	cfg := testConfig()
	w, _ := newTestWriter(t, cfg, bucket, c)

	type key struct {
		topic [16]byte
		part  int32
	}
	// Arrival order interleaves partitions; topic B sorts after A, and
	// partition 3 of A is given before partition 0.
	order := []key{{topicB, 0}, {topicA, 3}, {topicA, 0}, {topicB, 0}, {topicA, 3}, {topicA, 3}, {topicA, 0}}
	sent := make(map[key][][]byte)
	var waits []func(context.Context) (Result, error)
	for i, k := range order {
		raw := testBatch(t, 100+int64(k.part), int32(len(sent[k])), fmt.Sprintf("batch %d %s", i, strings.Repeat("v", i)))
		sent[k] = append(sent[k], raw)
		waits = append(waits, add(t, w, k.topic, k.part, raw))
	}
	drain(t, w)
	for _, wait := range waits {
		committed(t, wait)
	}

	objs := storedObjects(t, bucket)
	calls := c.objects()
	if len(objs) != 1 || len(calls) != 1 {
		t.Fatalf("%d objects stored, %d committed; want 1", len(objs), len(calls))
	}
	obj := calls[0]
	data := objs[obj.ID]
	if data == nil {
		t.Fatalf("committed object %s is not the stored one", obj.ID)
	}
	h, err := sharedobj.DecodeHeader(data, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if h.Writer != cfg.Agent || h.CutMs != obj.CutMs || h.ID.Time().UnixMilli() != obj.CutMs || len(h.Runs) != 3 {
		t.Fatalf("header %+v; committed object cut at %d; want writer %d and 3 runs", h, obj.CutMs, cfg.Agent)
	}
	// Each run gives back its partition's batches, exactly, in arrival order.
	for _, r := range h.Runs {
		want := sent[key{r.TopicID, r.Partition}]
		var got [][]byte
		run := data[int64(h.Size())+r.Position:][:r.Length]
		if err := r.Each(run, func(_ batch.Header, raw []byte) error {
			got = append(got, bytes.Clone(raw))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("run %x/%d: %d batches, want %d", r.TopicID, r.Partition, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("run %x/%d batch %d differs from the one sent", r.TopicID, r.Partition, i)
			}
		}
	}
	// The committer's list is in data order, and each entry points at its bytes.
	if len(obj.Batches) != len(order) {
		t.Fatalf("committer got %d batches, want %d", len(obj.Batches), len(order))
	}
	seen := make(map[key]int)
	var end int64
	for i, b := range obj.Batches {
		k := key{b.TopicID, b.Partition}
		raw := data[int64(h.Size())+b.Position:][:b.Size]
		if b.Position != end || !bytes.Equal(raw, sent[k][seen[k]]) {
			t.Fatalf("committer's batch %d (%x/%d at %d) is not the partition's batch %d", i, b.TopicID, b.Partition, b.Position, seen[k])
		}
		if hb, _ := batch.Check(raw); hb != b.Header {
			t.Fatalf("committer's batch %d header %+v, the bytes say %+v", i, b.Header, hb)
		}
		seen[k]++
		end += int64(b.Size)
	}
}

// TestCommitsInCutOrder holds the first object's PUT while the second
// one's completes: the second must not be committed before the first.
func TestCommitsInCutOrder(t *testing.T) {
	first, second := testBatch(t, 1, 0, "first"), testBatch(t, 1, 1, "second")
	cfg := testConfig()
	cfg.CommitBytes = int64(len(first)) // one batch an object
	bucket := &holdBucket{Bucket: objstore.NewMem(), hold: first, release: make(chan struct{})}
	c := newFakeCommitter()
	c.entered = make(chan Object, 2)
	w, _ := newTestWriter(t, cfg, bucket, c)

	w1 := add(t, w, topicA, 0, first)
	w2 := add(t, w, topicA, 0, second)
	testwait.Until(t, testTimeout, func() bool { return bucket.putsEnded() == 1 }, "the second object's PUT")
	// Uploaded, but behind the first object: give a broken writer time
	// to commit it anyway.
	select {
	case obj := <-c.entered:
		t.Fatalf("object %s committed while the first object's upload runs", obj.ID)
	case <-time.After(200 * time.Millisecond):
	}
	close(bucket.release)
	if o1, o2 := committed(t, w1), committed(t, w2); o1 != 0 || o2 != 1 {
		t.Fatalf("offsets %d, %d; want 0, 1", o1, o2)
	}
	objs := c.objects()
	if len(objs) != 2 || objs[0].CutMs > objs[1].CutMs {
		t.Fatalf("commits %v, want the two objects in cut order", objs)
	}
	if !bytes.Equal(batchBytes(t, bucket, objs[0]), first) {
		t.Fatal("the first commit is not of the first batch")
	}
}

// batchBytes reads obj's first batch from bucket.
func batchBytes(t *testing.T, bucket objstore.Bucket, obj Object) []byte {
	t.Helper()
	data, _, err := bucket.Get(context.Background(), obj.ID.Key())
	if err != nil {
		t.Fatal(err)
	}
	b := obj.Batches[0]
	return data[int64(obj.Header.Size())+b.Position:][:b.Size]
}

func TestPutRetried(t *testing.T) {
	faulty := objstore.NewFaulty(objstore.NewMem())
	faulty.FailNext(objstore.OpPut, 1, nil)
	faulty.FailNext(objstore.OpPut, 2, errors.New("503 SlowDown"))
	c := newFakeCommitter()
	w, _ := newTestWriter(t, testConfig(), faulty, c)

	wait := add(t, w, topicA, 0, testBatch(t, -1, 0, "x"))
	drain(t, w)
	committed(t, wait)
	if n := faulty.Calls(objstore.OpPut); n != 3 {
		t.Fatalf("%d PUTs, want 3", n)
	}
	if n := len(storedObjects(t, faulty)); n != 1 {
		t.Fatalf("%d objects stored, want 1", n)
	}
	if n := testutil.ToFloat64(w.metrics.uploaded); n != 1 {
		t.Fatalf("objects uploaded %v, want 1", n)
	}
}

// TestPutStoredAnswerLost: the PUT stored the object but its answer was
// an error; the retry finds the key taken by our own bytes.
func TestPutStoredAnswerLost(t *testing.T) {
	faulty := objstore.NewFaulty(objstore.NewMem())
	faulty.FailNextAfter(objstore.OpPut, 1, nil)
	w, _ := newTestWriter(t, testConfig(), faulty, newFakeCommitter())

	wait := add(t, w, topicA, 0, testBatch(t, -1, 0, "x"))
	drain(t, w)
	committed(t, wait)
	if p, g := faulty.Calls(objstore.OpPut), faulty.Calls(objstore.OpGet); p != 2 || g != 1 {
		t.Fatalf("%d PUTs and %d GETs, want 2 and 1", p, g)
	}
}

// TestPutKeyTakenByOthers: a key that holds other bytes is not
// overwritten nor retried, and the batches fail as a storage error.
func TestPutKeyTakenByOthers(t *testing.T) {
	faulty := objstore.NewFaulty(&squatBucket{Bucket: objstore.NewMem()})
	c := newFakeCommitter()
	w, _ := newTestWriter(t, testConfig(), faulty, c)

	wait := add(t, w, topicA, 0, testBatch(t, -1, 0, "x"))
	drain(t, w)
	_, err := outcome(t, wait)
	if !errors.Is(err, ErrUpload) || !errors.Is(err, objstore.ErrPreconditionFailed) {
		t.Fatalf("outcome %v, want ErrUpload wrapping the precondition failure", err)
	}
	if n := faulty.Calls(objstore.OpPut); n != 1 {
		t.Fatalf("%d PUTs, want 1", n)
	}
	if n := len(c.objects()); n != 0 {
		t.Fatalf("%d commits of an object not stored", n)
	}
}

func TestPutFailsUntilTimeout(t *testing.T) {
	faulty := objstore.NewFaulty(objstore.NewMem())
	faulty.FailAlways(objstore.OpPut, nil)
	cfg := testConfig()
	cfg.CommitTimeout = 400 * time.Millisecond
	cfg.CommitInterval = 10 * time.Millisecond
	c := newFakeCommitter()
	w, _ := newTestWriter(t, cfg, faulty, c)

	wait := add(t, w, topicA, 0, testBatch(t, -1, 0, "x"))
	_, err := outcome(t, wait)
	if !errors.Is(err, ErrUpload) || !errors.Is(err, objstore.ErrInjected) {
		t.Fatalf("outcome %v, want ErrUpload wrapping the PUT's error", err)
	}
	if n := faulty.Calls(objstore.OpPut); n < 2 {
		t.Fatalf("%d PUTs, want retries", n)
	}
	if n := len(c.objects()); n != 0 {
		t.Fatalf("%d commits of an object not stored", n)
	}
	if n := testutil.ToFloat64(w.metrics.outcomes.WithLabelValues(outcomeFailed)); n != 1 {
		t.Fatalf("failed outcomes %v, want 1", n)
	}
}

func TestCommitRetriedWithSameObject(t *testing.T) {
	c := newFakeCommitter()
	c.fail = 2
	w, _ := newTestWriter(t, testConfig(), objstore.NewMem(), c)

	w1 := add(t, w, topicA, 0, testBatch(t, 5, 0, "a"))
	w2 := add(t, w, topicB, 0, testBatch(t, 5, 0, "b"))
	drain(t, w)
	committed(t, w1)
	committed(t, w2)
	calls := c.objects()
	if len(calls) != 3 {
		t.Fatalf("%d commit calls, want 3", len(calls))
	}
	for i, o := range calls[1:] {
		if o.ID != calls[0].ID || fmt.Sprint(o.Batches) != fmt.Sprint(calls[0].Batches) {
			t.Fatalf("attempt %d committed %s %v, the first %s %v", i+2, o.ID, o.Batches, calls[0].ID, calls[0].Batches)
		}
	}
}

func TestCommitTimeout(t *testing.T) {
	c := newFakeCommitter()
	c.always = true
	cfg := testConfig()
	cfg.CommitTimeout = 400 * time.Millisecond
	cfg.CommitInterval = 10 * time.Millisecond
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), c)

	start := time.Now()
	wait := add(t, w, topicA, 0, testBatch(t, -1, 0, "x"))
	_, err := outcome(t, wait)
	if !errors.Is(err, ErrCommitTimeout) || !errors.Is(err, errCoordinator) {
		t.Fatalf("outcome %v, want ErrCommitTimeout wrapping the committer's error", err)
	}
	if took := time.Since(start); took > cfg.CommitTimeout+cfg.CommitInterval+time.Second {
		t.Fatalf("timed out after %v, the timeout is %v", took, cfg.CommitTimeout)
	}
	calls := c.objects()
	if len(calls) < 2 {
		t.Fatalf("%d commit calls, want retries", len(calls))
	}
	for _, o := range calls {
		if o.ID != calls[0].ID {
			t.Fatalf("retry committed %s, the first %s", o.ID, calls[0].ID)
		}
	}
	if n := testutil.ToFloat64(w.metrics.outcomes.WithLabelValues(outcomeTimedOut)); n != 1 {
		t.Fatalf("timed_out outcomes %v, want 1", n)
	}
	// The writer goes on with later objects.
	c.mu.Lock()
	c.always = false
	c.mu.Unlock()
	committed(t, add(t, w, topicA, 0, testBatch(t, -1, 0, "y")))
}

// TestBufferFull: Add waits while BufferMaxBytes are taken, in call
// order, and its ctx ends the wait.
func TestBufferFull(t *testing.T) {
	b := testBatch(t, -1, 0, "fill")
	cfg := testConfig()
	cfg.CommitBytes = int64(len(b))
	cfg.BufferMaxBytes = 2 * int64(len(b))
	c := newFakeCommitter()
	c.gate = make(chan struct{})
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), c)

	held := []func(context.Context) (Result, error){add(t, w, topicA, 0, b), add(t, w, topicA, 0, b)}
	if v := testutil.ToFloat64(w.metrics.buffered); v != float64(2*len(b)) {
		t.Fatalf("buffered bytes %v, want %d", v, 2*len(b))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := w.Add(ctx, topicA, 0, b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Add on a full buffer: %v, want its ctx's end", err)
	}

	// Two Adds wait, in order; they must be admitted in that order.
	type added struct {
		wait func(context.Context) (Result, error)
		err  error
	}
	results := make([]chan added, 2)
	for i := range results {
		results[i] = make(chan added, 1)
		raw := testBatch(t, -1, 0, fmt.Sprintf("waiter %d", i))
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			wait, err := w.Add(ctx, topicA, 0, raw)
			results[i] <- added{wait, err}
		}()
		testwait.Until(t, testTimeout, func() bool { return w.waitingAdds() == i+1 }, "Add %d waiting", i)
	}
	select {
	case r := <-results[0]:
		t.Fatalf("Add returned (%v) on a full buffer", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	close(c.gate)
	for _, wait := range held {
		committed(t, wait)
	}
	var offsets []int64
	for i, ch := range results {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("waiting Add %d: %v", i, r.err)
			}
			offsets = append(offsets, committed(t, r.wait)) // each is cut alone, by size
		case <-time.After(testTimeout):
			t.Fatalf("waiting Add %d not admitted", i)
		}
	}
	if offsets[0] >= offsets[1] {
		t.Fatalf("waiting Adds committed at %v, want call order", offsets)
	}
	testwait.Until(t, testTimeout, func() bool {
		return testutil.ToFloat64(w.metrics.buffered) == 0
	}, "buffered bytes back to 0")
}

func TestDrain(t *testing.T) {
	c := newFakeCommitter()
	c.gate = make(chan struct{})
	w, _ := newTestWriter(t, testConfig(), objstore.NewMem(), c)

	w1 := add(t, w, topicA, 0, testBatch(t, -1, 0, "a"))
	w2 := add(t, w, topicA, 1, testBatch(t, -1, 0, "b"))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := w.Drain(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with its commit held: %v, want its ctx's end", err)
	}
	if _, err := w.Add(context.Background(), topicA, 0, testBatch(t, -1, 0, "late")); !errors.Is(err, ErrDraining) {
		t.Fatalf("Add while draining: %v, want ErrDraining", err)
	}
	if n := len(c.objects()); n != 1 {
		t.Fatalf("%d commits after Drain, want the buffer cut at once into 1", n)
	}
	close(c.gate)
	drain(t, w)
	// Drain returned: the outcomes are there without waiting.
	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	for _, wait := range []func(context.Context) (Result, error){w1, w2} {
		if r, err := wait(done); err != nil || r.Err != nil {
			t.Fatalf("after Drain: %+v, %v; want committed", r, err)
		}
	}
}

// TestRawReused: the caller's buffer is overwritten after Add returns;
// the object holds the bytes given.
func TestRawReused(t *testing.T) {
	bucket := objstore.NewMem()
	c := newFakeCommitter()
	w, _ := newTestWriter(t, testConfig(), bucket, c)

	one, two := testBatch(t, -1, 0, "first value"), testBatch(t, -1, 0, "second value")
	buf := make([]byte, max(len(one), len(two)))
	n := copy(buf, one)
	w1 := add(t, w, topicA, 0, buf[:n])
	n = copy(buf, two)
	w2 := add(t, w, topicA, 0, buf[:n])
	for i := range buf {
		buf[i] = 0xff
	}
	drain(t, w)
	committed(t, w1)
	committed(t, w2)
	obj := c.objects()[0]
	data := storedObjects(t, bucket)[obj.ID]
	want := append(bytes.Clone(one), two...)
	if got := data[obj.Header.Size():]; !bytes.Equal(got, want) {
		t.Fatal("the object's batches are not those given to Add")
	}
}

// TestWaiterGivesUp: a batch whose waiter's ctx ends before its commit
// is sent is left out; one already sent is committed all the same.
func TestWaiterGivesUp(t *testing.T) {
	bucket := objstore.NewMem()
	c := newFakeCommitter()
	c.entered = make(chan Object, 4)
	c.gate = make(chan struct{})
	w, _ := newTestWriter(t, testConfig(), bucket, c)

	gone := add(t, w, topicA, 0, testBatch(t, -1, 0, "abandoned"))
	kept := testBatch(t, -1, 0, "kept")
	stay := add(t, w, topicA, 0, kept)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := gone(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait with an ended ctx: %v", err)
	}
	go w.Drain(context.Background())
	var obj Object
	select {
	case obj = <-c.entered:
	case <-time.After(testTimeout):
		t.Fatal("no commit")
	}
	if len(obj.Batches) != 1 || !bytes.Equal(batchBytes(t, bucket, obj), kept) {
		t.Fatalf("committing %v, want only the batch still awaited", obj.Batches)
	}
	// Sent: a waiter that gives up now does not take it out.
	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	if _, err := stay(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past its ctx: %v", err)
	}
	close(c.gate)
	committed(t, stay)
	if n := testutil.ToFloat64(w.metrics.outcomes.WithLabelValues(outcomeDropped)); n != 1 {
		t.Fatalf("dropped outcomes %v, want 1", n)
	}
	if r, err := gone(context.Background()); !errors.Is(err, context.Canceled) {
		t.Fatalf("the dropped batch's wait again: %+v, %v", r, err)
	}
}

func TestClose(t *testing.T) {
	b := testBatch(t, -1, 0, "x")
	cfg := testConfig()
	cfg.CommitBytes = int64(len(b))
	cfg.BufferMaxBytes = int64(len(b))
	c := newFakeCommitter()
	c.entered = make(chan Object, 1)
	c.gate = make(chan struct{}) // never opened: commits end with Close
	w, err := NewWriter(cfg, objstore.NewMem(), c, prometheus.NewRegistry(), discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	inCommit := add(t, w, topicA, 0, b)
	select {
	case <-c.entered:
	case <-time.After(testTimeout):
		t.Fatal("no commit")
	}
	blocked := make(chan error, 1)
	go func() {
		_, err := w.Add(context.Background(), topicA, 0, b)
		blocked <- err
	}()
	testwait.Until(t, testTimeout, func() bool { return w.waitingAdds() == 1 }, "an Add waiting for room")

	closed := make(chan struct{})
	go func() {
		w.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(testTimeout):
		t.Fatal("Close did not return")
	}
	if _, err := outcome(t, inCommit); !errors.Is(err, ErrClosed) {
		t.Fatalf("batch in commit at Close: %v, want ErrClosed", err)
	}
	if err := <-blocked; !errors.Is(err, ErrClosed) {
		t.Fatalf("Add waiting at Close: %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := w.Add(context.Background(), topicA, 0, b); !errors.Is(err, ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	if err := w.Drain(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Drain after Close: %v", err)
	}
}

// TestOutcomes: the coordinator's answers reach each waiter and the
// metrics; OnUploaded sees the stored bytes before the commit.
func TestOutcomes(t *testing.T) {
	bucket := objstore.NewMem()
	refused := errors.New("OUT_OF_ORDER_SEQUENCE_NUMBER")
	c := newFakeCommitter()
	c.answer = func(b Placed) (Result, bool) {
		switch b.Header.BaseSequence {
		case 1:
			return Result{BaseOffset: 40, Duplicate: true}, true
		case 2:
			return Result{BaseOffset: -1, Err: refused}, true
		}
		return Result{}, false
	}
	w, _ := newTestWriter(t, testConfig(), bucket, c)
	var mu sync.Mutex
	primed := make(map[sharedobj.ID][]byte)
	w.OnUploaded = func(id sharedobj.ID, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		// Give a writer that commits before priming the time to show it.
		time.Sleep(50 * time.Millisecond)
		if len(c.objects()) != 0 {
			t.Errorf("object %s primed after its commit began", id)
		}
		primed[id] = data
	}

	waits := []func(context.Context) (Result, error){}
	for seq := range int32(3) {
		waits = append(waits, add(t, w, topicA, 0, testBatch(t, 9, seq, "v")))
	}
	drain(t, w)
	want := []Result{{BaseOffset: 0}, {BaseOffset: 40, Duplicate: true}, {BaseOffset: -1, Err: refused}}
	for i, wait := range waits {
		r, err := outcome(t, wait)
		if err != nil || r != want[i] {
			t.Fatalf("batch %d: %+v, %v; want %+v", i, r, err, want[i])
		}
	}
	for _, o := range []string{outcomeCommitted, outcomeDuplicate, outcomeRefused} {
		if n := testutil.ToFloat64(w.metrics.outcomes.WithLabelValues(o)); n != 1 {
			t.Fatalf("%s outcomes %v, want 1", o, n)
		}
	}
	stored := storedObjects(t, bucket)
	mu.Lock()
	defer mu.Unlock()
	for id, data := range stored {
		if !bytes.Equal(primed[id], data) {
			t.Fatalf("object %s: OnUploaded saw other bytes than stored", id)
		}
	}
	if len(primed) != 1 || len(stored) != 1 {
		t.Fatalf("%d objects primed, %d stored; want 1", len(primed), len(stored))
	}
	if n := testutil.ToFloat64(w.metrics.objectBytes); n != float64(len(stored[c.objects()[0].ID])) {
		t.Fatalf("object bytes %v", n)
	}
}

// TestConcurrentPartitions: producers on several partitions add at once;
// every batch is committed once, in each producer's order.
func TestConcurrentPartitions(t *testing.T) {
	const producers, batches = 4, 40
	cfg := testConfig()
	cfg.CommitBytes = 700
	cfg.BufferMaxBytes = 2000
	cfg.CommitInterval = 5 * time.Millisecond
	cfg.UploadsInFlight = 3
	c := newFakeCommitter()
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), c)

	errs := make(chan error, producers)
	for p := range int32(producers) {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			var waits []func(context.Context) (Result, error)
			for seq := range int32(batches) {
				raw := testBatch(t, int64(p), seq, strings.Repeat("r", int(seq)))
				wait, err := w.Add(ctx, topicA, p, raw)
				if err != nil {
					errs <- err
					return
				}
				waits = append(waits, wait)
			}
			for seq, wait := range waits {
				r, err := wait(ctx)
				if err != nil || r.Err != nil || r.BaseOffset != int64(seq) {
					errs <- fmt.Errorf("partition %d batch %d: %+v, %v", p, seq, r, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range producers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, o := range c.objects() {
		n += len(o.Batches)
	}
	if n != producers*batches {
		t.Fatalf("%d batches committed, want %d", n, producers*batches)
	}
}

func TestAddRefusesBadBatch(t *testing.T) {
	w, _ := newTestWriter(t, testConfig(), objstore.NewMem(), newFakeCommitter())
	b := testBatch(t, -1, 0, "x")
	b[len(b)-1] ^= 1
	if _, err := w.Add(context.Background(), topicA, 0, b); !errors.Is(err, batch.ErrCorrupt) {
		t.Fatalf("Add of a batch with a bad CRC: %v", err)
	}
	if _, err := w.Add(context.Background(), topicA, -1, testBatch(t, -1, 0, "x")); err == nil {
		t.Fatal("Add to partition -1 accepted")
	}
}

// TestCommitHangs: a Commit call that does not return is ended at the
// object's deadline.
func TestCommitHangs(t *testing.T) {
	c := newFakeCommitter()
	c.gate = make(chan struct{}) // never opened
	cfg := testConfig()
	cfg.CommitTimeout = 300 * time.Millisecond
	cfg.CommitInterval = 10 * time.Millisecond
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), c)

	_, err := outcome(t, add(t, w, topicA, 0, testBatch(t, -1, 0, "x")))
	if !errors.Is(err, ErrCommitTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("outcome %v, want ErrCommitTimeout from the call's deadline, not a ctx error the caller would take for its own", err)
	}
	if n := len(c.objects()); n != 1 {
		t.Fatalf("%d commit calls, want the one that hung", n)
	}
}

// TestBufferFullFirstComeFirstServed: an Add that would fit does not
// pass one that waits for room before it, so one partition's batches
// keep their order.
func TestBufferFullFirstComeFirstServed(t *testing.T) {
	b := testBatch(t, -1, 0, "fill")
	cfg := testConfig()
	cfg.CommitBytes = int64(len(b))
	cfg.BufferMaxBytes = 2 * int64(len(b))
	c := newFakeCommitter()
	c.gate = make(chan struct{})
	w, _ := newTestWriter(t, cfg, objstore.NewMem(), c)

	held := add(t, w, topicA, 0, b)
	big := testBatch(t, 1, 0, strings.Repeat("B", len(b))) // does not fit beside held
	type added struct {
		wait func(context.Context) (Result, error)
		err  error
	}
	first := make(chan added, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		wait, err := w.Add(ctx, topicA, 0, big)
		first <- added{wait, err}
	}()
	testwait.Until(t, testTimeout, func() bool { return w.waitingAdds() == 1 }, "the large Add waiting")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := w.Add(ctx, topicA, 0, b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an Add that fits, behind a waiting one: %v; want to wait behind it", err)
	}
	close(c.gate)
	committed(t, held)
	r := <-first
	if r.err != nil {
		t.Fatal(r.err)
	}
	committed(t, r.wait)
}
