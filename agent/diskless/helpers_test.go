package diskless

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// testTimeout bounds every wait of these tests.
const testTimeout = 10 * time.Second

var (
	topicA = [16]byte{0xa}
	topicB = [16]byte{0xb}
)

// testBatch builds one record batch of producer producerID (-1: none)
// at sequence seq, holding value.
func testBatch(t testing.TB, producerID int64, seq int32, value string) []byte {
	t.Helper()
	o := batch.DefaultBuildOptions()
	o.BaseTimestamp = 1_700_000_000_000
	if producerID >= 0 {
		o.ProducerID, o.ProducerEpoch, o.BaseSequence = producerID, 0, seq
	}
	b, err := batch.Build(o, []batch.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testConfig cuts only when told (Drain) or by size: an hour's interval,
// and a commit timeout long enough never to pass.
func testConfig() Config {
	c := DefaultConfig()
	c.Agent = 7
	c.CommitInterval = time.Hour
	c.CommitTimeout = 2 * time.Hour
	return c
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestWriter starts a writer that Close stops at the test's end.
func newTestWriter(t *testing.T, cfg Config, bucket objstore.Bucket, c Committer) (*Writer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	w, err := NewWriter(cfg, bucket, c, reg, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, reg
}

// add is Add that must succeed.
func add(t *testing.T, w *Writer, topic [16]byte, partition int32, raw []byte) func(context.Context) (Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	wait, err := w.Add(ctx, topic, partition, raw)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	return wait
}

// outcome waits, within testTimeout, for a batch's outcome.
func outcome(t *testing.T, wait func(context.Context) (Result, error)) (Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	r, err := wait(ctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		t.Fatalf("no outcome within %v", testTimeout)
	}
	return r, err
}

// committed waits for a batch to be committed and returns its offset.
func committed(t *testing.T, wait func(context.Context) (Result, error)) int64 {
	t.Helper()
	r, err := outcome(t, wait)
	if err != nil || r.Err != nil {
		t.Fatalf("outcome %+v, %v; want committed", r, err)
	}
	return r.BaseOffset
}

// drain drains w within testTimeout.
func drain(t *testing.T, w *Writer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := w.Drain(ctx); err != nil {
		t.Fatalf("Drain: %v", err)
	}
}

// fakeCommitter assigns offsets per partition in the order it sees
// batches, and remembers every call. Tests arm failures and a gate.
type fakeCommitter struct {
	mu      sync.Mutex
	calls   []Object
	next    map[partKey]int64
	done    map[sharedobj.ID][]Result // a repeated commit is answered from here
	fail    int                       // fail this many more calls
	always  bool                      // fail every call
	gate    chan struct{}             // when set, calls wait for it to close (or ctx)
	answer  func(Placed) (Result, bool)
	entered chan Object // every call, when set (buffered by the test)
}

var errCoordinator = errors.New("fake: coordinator unreachable")

func newFakeCommitter() *fakeCommitter {
	return &fakeCommitter{next: make(map[partKey]int64), done: make(map[sharedobj.ID][]Result)}
}

func (f *fakeCommitter) Commit(ctx context.Context, obj Object) ([]Result, error) {
	f.mu.Lock()
	obj.Batches = slices.Clone(obj.Batches)
	f.calls = append(f.calls, obj)
	gate, entered := f.gate, f.entered
	f.mu.Unlock()
	if entered != nil {
		entered <- obj
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.always || f.fail > 0 {
		f.fail--
		return nil, errCoordinator
	}
	if r, ok := f.done[obj.ID]; ok {
		return r, nil
	}
	out := make([]Result, len(obj.Batches))
	for i, b := range obj.Batches {
		if f.answer != nil {
			if r, ok := f.answer(b); ok {
				out[i] = r
				continue
			}
		}
		k := partKey{b.TopicID, b.Partition}
		out[i] = Result{BaseOffset: f.next[k]}
		f.next[k] += int64(b.Header.LastOffsetDelta) + 1
	}
	f.done[obj.ID] = out
	return out, nil
}

func (f *fakeCommitter) objects() []Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// holdBucket holds the Puts of objects holding the bytes hold until
// release is closed, and counts the Puts that returned, so a test can
// make uploads end out of order.
type holdBucket struct {
	objstore.Bucket
	hold    []byte
	release chan struct{}

	mu    sync.Mutex
	ended int // Puts returned
}

func (h *holdBucket) Put(ctx context.Context, key string, data []byte, opts objstore.PutOptions) (string, error) {
	if bytes.Contains(data, h.hold) {
		select {
		case <-h.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	etag, err := h.Bucket.Put(ctx, key, data, opts)
	h.mu.Lock()
	h.ended++
	h.mu.Unlock()
	return etag, err
}

func (h *holdBucket) putsEnded() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ended
}

// squatBucket answers its first Put as if another object held the key,
// after storing other bytes there: a collision of ids.
type squatBucket struct {
	objstore.Bucket
	once sync.Once
}

func (s *squatBucket) Put(ctx context.Context, key string, data []byte, opts objstore.PutOptions) (string, error) {
	squatted := false
	s.once.Do(func() {
		squatted = true
	})
	if squatted {
		if _, err := s.Bucket.Put(ctx, key, []byte("someone else's object"), opts); err != nil {
			return "", err
		}
		return "", objstore.ErrPreconditionFailed
	}
	return s.Bucket.Put(ctx, key, data, opts)
}

// storedObjects returns every commit object in bucket, decoded and
// checked, with its bytes.
func storedObjects(t *testing.T, bucket objstore.Bucket) map[sharedobj.ID][]byte {
	t.Helper()
	out := make(map[sharedobj.ID][]byte)
	ctx := context.Background()
	err := bucket.List(ctx, sharedobj.KeyPrefix, func(key string, _ objstore.Attributes) error {
		id, ok := sharedobj.ParseKey(key)
		if !ok {
			t.Fatalf("key %q in the objects' prefix", key)
		}
		data, _, err := bucket.Get(ctx, key)
		if err != nil {
			return err
		}
		h, err := sharedobj.DecodeHeader(data, int64(len(data)))
		if err != nil {
			t.Fatalf("object %s: %v", id, err)
		}
		if err := h.CheckData(data[h.Size():]); err != nil {
			t.Fatalf("object %s: %v", id, err)
		}
		if h.ID != id {
			t.Fatalf("object under %s says it is %s", id, h.ID)
		}
		out[id] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
