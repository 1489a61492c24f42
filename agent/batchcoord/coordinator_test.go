package batchcoord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
)

// memLog is a __diskless_state partition in memory: Append stamps each
// batch with its offset, as a leader does, and can be made to fail.
type memLog struct {
	batches [][]byte
	end     int64
	fail    error
}

func (m *memLog) Append(_ context.Context, raw []byte) error {
	if m.fail != nil {
		return m.fail
	}
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return err
	}
	b := append([]byte(nil), raw...)
	batch.SetBaseOffset(b, m.end)
	m.batches = append(m.batches, b)
	m.end += int64(h.LastOffsetDelta) + 1
	return nil
}

func (m *memLog) Read(offset int64, _ int) ([]byte, error) {
	var out []byte
	for _, b := range m.batches {
		h, _ := batch.ParseHeader(b)
		if h.LastOffset() >= offset {
			out = append(out, b...)
		}
	}
	return out, nil
}

func (m *memLog) LogStartOffset() int64 { return 0 }
func (m *memLog) HighWatermark() int64  { return m.end }

var (
	tp0 = PartitionKey{TopicID: [16]byte{1}, Partition: 0}
	tp1 = PartitionKey{TopicID: [16]byte{1}, Partition: 1}
)

func load(t *testing.T, l *memLog, epoch int32, now func() time.Time) *Coordinator {
	t.Helper()
	c, err := Load(3, l, Config{Epoch: epoch, CommitTimeout: 30 * time.Second, Now: now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// plain is a batch of n records without a producer at position pos.
func plain(k PartitionKey, pos int64, n int32) CommitBatch {
	return CommitBatch{Key: k, Position: pos, Size: 100, Header: batch.Header{
		LastOffsetDelta: n - 1, RecordCount: n, MaxTimestamp: 1000 + pos, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Magic: 2}}
}

// idem is a batch of n records of producer 7 at epoch 0 from sequence seq.
func idem(k PartitionKey, pos int64, seq, n int32) CommitBatch {
	b := plain(k, pos, n)
	b.Header.ProducerID, b.Header.ProducerEpoch, b.Header.BaseSequence = 7, 0, seq
	return b
}

func commit(t *testing.T, c *Coordinator, id byte, bs ...CommitBatch) []CommitResult {
	t.Helper()
	res, err := c.Commit(context.Background(), [16]byte{id}, time.Now().UnixMilli(), bs)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func offsets(res []CommitResult) []int64 {
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.BaseOffset
		if r.Err != nil {
			out[i] = -100
		}
	}
	return out
}

// TestCommitAssignsOffsetsPerPartitionInOrder: offsets are given at
// commit, per partition, in the order of the batches; the index then
// finds each batch where the object holds it.
func TestCommitAssignsOffsetsPerPartitionInOrder(t *testing.T) {
	c := load(t, &memLog{}, 1, nil)
	res := commit(t, c, 1, plain(tp0, 0, 3), plain(tp1, 100, 2), plain(tp0, 200, 1))
	if got := offsets(res); got[0] != 0 || got[1] != 0 || got[2] != 3 {
		t.Fatalf("offsets %v, want [0 0 3]", got)
	}
	res = commit(t, c, 2, plain(tp0, 0, 5))
	if res[0].BaseOffset != 4 {
		t.Fatalf("second object's batch at %d, want 4", res[0].BaseOffset)
	}
	v, _, err := c.Read(tp0, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if v.HighWatermark != 9 || v.LastStable != 9 || len(v.Batches) != 2 {
		t.Fatalf("view %+v", v)
	}
	if b := v.Batches[0]; b.BaseOffset != 3 || b.Position != 200 || b.ObjectID != [16]byte{1} || b.Epoch != 1 {
		t.Fatalf("batch at 3: %+v", b)
	}
}

// TestIdempotence: a producer's retry through another object is a
// duplicate answered with the first offsets, a gap in its sequences is
// refused, and both survive a reload from the log.
func TestIdempotence(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	if got := offsets(commit(t, c, 1, idem(tp0, 0, 0, 3), idem(tp0, 100, 3, 2))); got[0] != 0 || got[1] != 3 {
		t.Fatalf("offsets %v", got)
	}
	for _, c := range []*Coordinator{c, load(t, l, 2, nil)} {
		res := commit(t, c, 9, idem(tp0, 0, 3, 2), idem(tp0, 50, 9, 1))
		if !res[0].Duplicate || res[0].BaseOffset != 3 {
			t.Fatalf("retry: %+v, want a duplicate at 3", res[0])
		}
		if !errors.Is(res[1].Err, producers.ErrOutOfOrderSequence) {
			t.Fatalf("gap: %+v, want out of order", res[1])
		}
	}
	if hw := l.end; hw != 1 {
		t.Fatalf("the log holds %d records, want the first commit's 1: duplicates and refusals append nothing", hw)
	}
}

// TestRepeatedCommitOfAnObject: a writer that did not hear the answer
// commits the same object again, to this coordinator or to the next one
// after a reload; the batches keep their offsets and nothing is added.
func TestRepeatedCommitOfAnObject(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	first := offsets(commit(t, c, 4, plain(tp0, 0, 2), plain(tp1, 10, 1)))
	for _, c := range []*Coordinator{c, load(t, l, 2, nil)} {
		again := offsets(commit(t, c, 4, plain(tp0, 0, 2), plain(tp1, 10, 1)))
		if again[0] != first[0] || again[1] != first[1] {
			t.Fatalf("again %v, first %v", again, first)
		}
		if v, _, _ := c.Read(tp0, 0, 1); v.HighWatermark != 2 {
			t.Fatalf("high watermark %d after the repeat, want 2", v.HighWatermark)
		}
	}
}

// TestFailedAppendClosesAndReloadForgets: an append that fails leaves
// the coordinator closed (its producer state ran ahead of its log); the
// next one, loaded from the log, has not seen the batch, which commits
// with the same sequence.
func TestFailedAppendClosesAndReloadForgets(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	commit(t, c, 1, idem(tp0, 0, 0, 1))
	l.fail = errors.New("not leader")
	if _, err := c.Commit(context.Background(), [16]byte{2}, time.Now().UnixMilli(), []CommitBatch{idem(tp0, 0, 1, 1)}); err == nil {
		t.Fatal("commit with a failing append succeeded")
	}
	if !c.Closed() {
		t.Fatal("coordinator not closed after a failed append")
	}
	if _, _, err := c.Read(tp0, 0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read on a closed coordinator: %v", err)
	}
	l.fail = nil
	c = load(t, l, 2, nil)
	res := commit(t, c, 2, idem(tp0, 0, 1, 1))
	if res[0].Err != nil || res[0].Duplicate || res[0].BaseOffset != 1 {
		t.Fatalf("after reload: %+v, want offset 1", res[0])
	}
}

// TestOldObjectRefused: an object cut longer ago than the commit timeout
// may already be gone; its commit is refused whole.
func TestOldObjectRefused(t *testing.T) {
	c := load(t, &memLog{}, 1, nil)
	old := time.Now().Add(-time.Minute).UnixMilli()
	if _, err := c.Commit(context.Background(), [16]byte{1}, old, []CommitBatch{plain(tp0, 0, 1)}); !errors.Is(err, ErrCommitTooOld) {
		t.Fatalf("got %v", err)
	}
}

// TestReadWakesAtCommit: a long poll at the high watermark is woken by
// the next commit to its partition.
func TestReadWakesAtCommit(t *testing.T) {
	c := load(t, &memLog{}, 1, nil)
	_, moved, err := c.Read(tp1, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-moved:
		t.Fatal("woken before any commit")
	default:
	}
	commit(t, c, 1, plain(tp1, 0, 1))
	select {
	case <-moved:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken by the commit")
	}
}

// TestEpochHistory: OffsetForLeaderEpoch answers from the epochs the
// commits were made at, across a reload at a new epoch.
func TestEpochHistory(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	commit(t, c, 1, plain(tp0, 0, 4))
	c = load(t, l, 5, nil)
	commit(t, c, 2, plain(tp0, 0, 2))
	for _, tc := range []struct {
		ask, epoch int32
		end        int64
	}{{0, -1, -1}, {1, 1, 4}, {3, 1, 4}, {5, 5, 6}, {9, 5, 6}} {
		e, end, err := c.OffsetForEpoch(tp0, tc.ask)
		if err != nil || e != tc.epoch || end != tc.end {
			t.Fatalf("epoch %d: (%d, %d, %v), want (%d, %d)", tc.ask, e, end, err, tc.epoch, tc.end)
		}
	}
	v, _, _ := c.Read(tp0, 4, 1<<20)
	if len(v.Batches) != 1 || v.Batches[0].Epoch != 5 {
		t.Fatalf("batch at 4: %+v", v.Batches)
	}
}

// txnBatch is a transactional batch of n records of producer 5 at epoch 0.
func txnBatch(k PartitionKey, pos int64, seq, n int32) CommitBatch {
	b := idem(k, pos, seq, n)
	b.Header.ProducerID = 5
	b.Header.Attributes |= batch.AttrTransactional
	return b
}

// marker is producer 5's inline marker, an abort or a commit.
func marker(t *testing.T, k PartitionKey, abort bool) CommitBatch {
	t.Helper()
	typ := batch.ControlCommit
	if abort {
		typ = batch.ControlAbort
	}
	raw, err := batch.BuildMarker(5, 0, batch.Marker{Type: typ, CoordinatorEpoch: 1}, time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	h, err := batch.ParseHeader(raw)
	if err != nil {
		t.Fatal(err)
	}
	return CommitBatch{Key: k, Size: int32(len(raw)), Header: h, Inline: raw}
}

// TestTransactions (KIP-890 and read_committed): a transactional batch
// commits only under a guard; the open transaction holds the last stable
// offset; its abort marker, committed inline, releases it, records the
// aborted range and removes the guard, so a late batch of the ended
// transaction is refused; all of it survives a reload.
func TestTransactions(t *testing.T) {
	l := &memLog{}
	c := load(t, l, 1, nil)
	if res := commit(t, c, 1, txnBatch(tp0, 0, 0, 2)); !errors.Is(res[0].Err, ErrNoGuard) {
		t.Fatalf("unguarded: %+v, want ErrNoGuard", res[0])
	}
	if err := c.Guard(tp0, 5, 0); err != nil {
		t.Fatal(err)
	}
	res := commit(t, c, 2, plain(tp0, 0, 1), txnBatch(tp0, 10, 0, 2), plain(tp0, 20, 1), txnBatch(tp0, 30, 2, 1))
	if got := offsets(res); got[0] != 0 || got[1] != 1 || got[2] != 3 || got[3] != 4 {
		t.Fatalf("offsets %v, want [0 1 3 4]", got)
	}
	if v, _, _ := c.Read(tp0, 0, 1); v.LastStable != 1 || v.HighWatermark != 5 {
		t.Fatalf("open transaction: %+v, want last stable 1", v)
	}
	if res := commit(t, c, 0, marker(t, tp0, true)); res[0].Err != nil || res[0].BaseOffset != 5 {
		t.Fatalf("marker: %+v", res[0])
	}
	for i, c := range []*Coordinator{c, load(t, l, 2, nil)} {
		v, _, _ := c.Read(tp0, 5, 1<<20)
		if v.LastStable != 6 || v.HighWatermark != 6 || len(v.Batches) != 1 || v.Batches[0].Inline == nil {
			t.Fatalf("coordinator %d after the abort: %+v", i, v)
		}
		ab, err := c.AbortedIn(tp0, 0, 6)
		if err != nil || len(ab) != 1 || ab[0] != (Aborted{ProducerID: 5, FirstOffset: 1, LastOffset: 5}) {
			t.Fatalf("coordinator %d aborted %+v, %v", i, ab, err)
		}
		if ab, _ := c.AbortedIn(tp0, 6, 7); len(ab) != 0 {
			t.Fatalf("coordinator %d aborted above the marker: %+v", i, ab)
		}
	}
	if res := commit(t, c, 3, txnBatch(tp0, 40, 3, 1)); !errors.Is(res[0].Err, ErrNoGuard) {
		t.Fatalf("a late batch of the aborted transaction: %+v, want ErrNoGuard", res[0])
	}
	if res := commit(t, c, 4, CommitBatch{Key: tp0, Header: marker(t, tp0, false).Header}); !errors.Is(res[0].Err, ErrControlBatch) {
		t.Fatalf("a marker in an object: %+v, want ErrControlBatch", res[0])
	}
}
