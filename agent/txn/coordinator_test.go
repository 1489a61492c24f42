package txn

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/testwait"
)

// memLog is a partition in memory: appended batches get the next offsets.
type memLog struct {
	mu      sync.Mutex
	batches [][]byte
	next    int64
}

func (l *memLog) Append(_ context.Context, raw []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return err
	}
	b := slices.Clone(raw)
	batch.SetBaseOffset(b, l.next)
	l.next += int64(h.LastOffsetDelta) + 1
	l.batches = append(l.batches, b)
	return nil
}

func (l *memLog) Read(offset int64, _ int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.batches {
		h, _ := batch.ParseHeader(b)
		if h.LastOffset() >= offset {
			out = append(out, b...)
		}
	}
	return out, nil
}

func (l *memLog) LogStartOffset() int64 { return 0 }
func (l *memLog) HighWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// markerCall is one WriteMarkers call.
type markerCall struct {
	producerID int64
	epoch      int16
	commit     bool
	parts      []TopicPartition
}

// fakeMarkers records the markers asked for; the first failures calls
// fail.
type fakeMarkers struct {
	mu       sync.Mutex
	calls    []markerCall
	failures int
	// gate, if set, holds every call until it is closed.
	gate chan struct{}
}

func (m *fakeMarkers) WriteMarkers(_ context.Context, pid int64, epoch int16, commit bool, _ int32, parts []TopicPartition) error {
	m.mu.Lock()
	gate := m.gate
	m.mu.Unlock()
	if gate != nil {
		<-gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures > 0 {
		m.failures--
		return errors.New("leader moved")
	}
	m.calls = append(m.calls, markerCall{pid, epoch, commit, parts})
	return nil
}

func (m *fakeMarkers) written() []markerCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

type counterIDs struct {
	mu   sync.Mutex
	next int64
}

func (c *counterIDs) NewProducerID(context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	return c.next, nil
}

// fixture is a coordinator over a memLog, on a clock the test moves.
type fixture struct {
	t       *testing.T
	log     *memLog
	markers *fakeMarkers
	ids     *counterIDs
	now     time.Time
	nowMu   sync.Mutex
	c       *Coordinator
	// metrics, when set before a load, are the loaded coordinator's.
	metrics *Metrics
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, log: &memLog{}, markers: &fakeMarkers{}, ids: &counterIDs{next: 1000}, now: time.UnixMilli(1_700_000_000_000)}
	f.c = f.load(nil)
	return f
}

func (f *fixture) load(beforeMarkers func(string) bool) *Coordinator {
	cfg := DefaultConfig()
	cfg.MarkerRetryBackoff = time.Millisecond
	cfg.Markers, cfg.ProducerIDs, cfg.BeforeMarkers = f.markers, f.ids, beforeMarkers
	cfg.Metrics = f.metrics
	cfg.Now = func() time.Time {
		f.nowMu.Lock()
		defer f.nowMu.Unlock()
		return f.now
	}
	c, err := Load(context.Background(), 0, f.log, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.Close)
	return c
}

func (f *fixture) advance(d time.Duration) {
	f.nowMu.Lock()
	defer f.nowMu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fixture) init(id string, expectedID int64, expectedEpoch int16) (int64, int16, error) {
	return f.c.InitProducerID(context.Background(), id, time.Minute, expectedID, expectedEpoch)
}

// waitState waits until id's transaction is in state, with no completion
// running.
func (f *fixture) waitState(id string, state State) Metadata {
	f.t.Helper()
	var m Metadata
	testwait.Until(f.t, 10*time.Second, func() bool {
		var ok bool
		m, ok = f.c.Describe(id)
		f.c.mu.Lock()
		busy := ok && f.c.txns[id].completing
		f.c.mu.Unlock()
		return ok && !busy && m.State == state
	}, "%s to be %s", id, state)
	return m
}

var ctx = context.Background()

var partsAB = []TopicPartition{{"a", 0}, {"b", 1}}

func TestInitProducerIDBumpsTheEpochAndFences(t *testing.T) {
	f := newFixture(t)
	pid, epoch, err := f.init("t1", -1, -1)
	if err != nil || epoch != 0 {
		t.Fatalf("first init: %d/%d %v", pid, epoch, err)
	}
	pid2, epoch2, err := f.init("t1", -1, -1)
	if err != nil || pid2 != pid || epoch2 != 1 {
		t.Fatalf("second init: %d/%d %v, want %d/1", pid2, epoch2, err, pid)
	}
	if err := f.c.AddPartitions(ctx, "t1", pid, 0, partsAB, false); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("add at the old epoch: %v", err)
	}
	if err := f.c.AddPartitions(ctx, "t1", pid+1, 1, partsAB, false); !errors.Is(err, ErrInvalidProducerIDMapping) {
		t.Fatalf("add with another producer id: %v", err)
	}
	if err := f.c.AddPartitions(ctx, "t1", pid, 1, partsAB, false); err != nil {
		t.Fatalf("add: %v", err)
	}
	if _, _, err := f.c.InitProducerID(ctx, "t2", 16*time.Minute, -1, -1); !errors.Is(err, ErrInvalidTimeout) {
		t.Fatalf("init above the maximum timeout: %v", err)
	}
	// KIP-360: a producer that is not current is fenced.
	if _, _, err := f.init("t1", pid, 0); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("KIP-360 init at an old epoch: %v", err)
	}
}

func TestEndTxnWritesMarkersThenCompletes(t *testing.T) {
	f := newFixture(t)
	pid, epoch, _ := f.init("t1", -1, -1)
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("commit with nothing open: %v", err)
	}
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB, false); err != nil {
		t.Fatal(err)
	}
	f.markers.failures = 2 // the first rounds fail; the coordinator retries
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	m := f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	if len(m.Partitions) != 0 {
		t.Fatalf("complete transaction keeps partitions %v", m.Partitions)
	}
	want := []markerCall{{pid, epoch, true, partsAB}}
	if got := f.markers.written(); !slices.EqualFunc(got, want, equalCall) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); err != nil {
		t.Fatalf("retried commit: %v", err)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, false, false); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}
}

func equalCall(a, b markerCall) bool {
	return a.producerID == b.producerID && a.epoch == b.epoch && a.commit == b.commit && slices.Equal(a.parts, b.parts)
}

// TestInitAbortsTheOpenTransaction: a new instance's InitProducerID
// aborts the old one's transaction at a bumped epoch and is told to retry
// meanwhile.
// The next transaction's AddPartitions, sent as soon as EndTxn answers,
// waits for the previous transaction's markers instead of answering
// CONCURRENT_TRANSACTIONS; markers that do not land in time still get
// that answer.
func TestAddPartitionsWaitsForThePreviousMarkers(t *testing.T) {
	f := newFixture(t)
	pid, epoch, _ := f.init("t1", -1, -1)
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB, false); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	f.markers.mu.Lock()
	f.markers.gate = gate
	f.markers.mu.Unlock()
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, func() { close(gate) })
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB[:1], false); err != nil {
		t.Fatalf("AddPartitions while the markers were being written: %v, want it to wait for them", err)
	}
	if m := f.waitState("t1", kmsg.TransactionStateOngoing); !slices.Equal(m.Partitions, partsAB[:1]) {
		t.Fatalf("the next transaction holds %v, want %v", m.Partitions, partsAB[:1])
	}

	stuck := make(chan struct{})
	defer close(stuck)
	f.markers.mu.Lock()
	f.markers.gate = stuck
	f.markers.mu.Unlock()
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, false, false); err != nil {
		t.Fatal(err)
	}
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB, false); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("AddPartitions while the markers are stuck: %v, want ErrConcurrentTransactions", err)
	}
}

func TestInitAbortsTheOpenTransaction(t *testing.T) {
	f := newFixture(t)
	pid, _, _ := f.init("t1", -1, -1)
	if err := f.c.AddPartitions(ctx, "t1", pid, 0, partsAB, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.init("t1", -1, -1); !errors.Is(err, ErrConcurrentTransactions) {
		t.Fatalf("init with a transaction open: %v", err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteAbort)
	if got, want := f.markers.written(), []markerCall{{pid, 1, false, partsAB}}; !slices.EqualFunc(got, want, equalCall) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	if _, epoch, err := f.init("t1", -1, -1); err != nil || epoch != 2 {
		t.Fatalf("init after the abort: epoch %d %v, want 2", epoch, err)
	}
}

// TestLoadCompletesPreparedTransactions: a coordinator that stopped
// between PrepareCommit and its markers leaves the decision in the log;
// the next one to load the partition writes the markers and completes it.
func TestLoadCompletesPreparedTransactions(t *testing.T) {
	f := newFixture(t)
	f.c.Close()
	f.c = f.load(func(string) bool { return false }) // stops before markers
	pid, epoch, _ := f.init("t1", -1, -1)
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	f.c.Close()
	if got := f.markers.written(); len(got) != 0 {
		t.Fatalf("markers written before the failover: %+v", got)
	}
	f.c = f.load(nil)
	m := f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	if m.ProducerID != pid || m.ProducerEpoch != epoch {
		t.Fatalf("replayed %+v", m)
	}
	if got, want := f.markers.written(), []markerCall{{pid, epoch, true, partsAB}}; !slices.EqualFunc(got, want, equalCall) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	// A third load replays a completed transaction: nothing to redo.
	f.c.Close()
	f.c = f.load(nil)
	f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	if n := len(f.markers.written()); n != 1 {
		t.Fatalf("%d marker rounds after reloading a completed transaction", n)
	}
}

// TestTimeoutAbortsAndFences: a transaction open past its timeout is
// aborted at a new epoch; the producer that left it may recover its id
// with KIP-360 but not commit.
func TestTimeoutAbortsAndFences(t *testing.T) {
	f := newFixture(t)
	pid, epoch, _ := f.init("t1", -1, -1)
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB, false); err != nil {
		t.Fatal(err)
	}
	if n, err := f.c.AbortTimedOut(ctx); n != 0 || err != nil {
		t.Fatalf("abort before the timeout: %d %v", n, err)
	}
	f.advance(time.Minute + time.Millisecond)
	if n, err := f.c.AbortTimedOut(ctx); n != 1 || err != nil {
		t.Fatalf("abort after the timeout: %d %v", n, err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteAbort)
	if got, want := f.markers.written(), []markerCall{{pid, epoch + 1, false, partsAB}}; !slices.EqualFunc(got, want, equalCall) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("commit by the timed-out producer: %v", err)
	}
	if p, e, err := f.init("t1", pid, epoch); err != nil || p != pid || e != epoch+2 {
		t.Fatalf("KIP-360 recovery: %d/%d %v, want %d/%d", p, e, err, pid, epoch+2)
	}
}

// TestExpireIDs: an id with no transaction open is forgotten once its
// last change is older than the expiration, and stays forgotten after a
// reload (its tombstone); an id with a transaction open is kept.
func TestExpireIDs(t *testing.T) {
	f := newFixture(t)
	f.init("idle", -1, -1)
	pid, epoch, _ := f.init("busy", -1, -1)
	if err := f.c.AddPartitions(ctx, "busy", pid, epoch, partsAB, false); err != nil {
		t.Fatal(err)
	}
	f.advance(7*24*time.Hour + time.Second)
	if n, err := f.c.ExpireIDs(ctx); n != 1 || err != nil {
		t.Fatalf("expired %d (%v), want 1", n, err)
	}
	if _, ok := f.c.Describe("idle"); ok {
		t.Fatal("the idle id is still known")
	}
	f.c.Close()
	f.c = f.load(nil)
	if _, ok := f.c.Describe("idle"); ok {
		t.Fatal("the idle id is known again after a reload")
	}
	if _, ok := f.c.Describe("busy"); !ok {
		t.Fatal("the id with a transaction open was forgotten")
	}
}
