package log

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/internal/vfs"
)

// txnBatch is a transactional batch of producer pid.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, records int) []byte {
	t.Helper()
	return mkBatch(t, spec{pid: pid, epoch: epoch, seq: seq, records: records, attrs: batch.AttrTransactional})
}

func marker(t testing.TB, pid int64, epoch int16, typ batch.ControlType, coordEpoch int32) []byte {
	t.Helper()
	b, err := batch.BuildMarker(pid, epoch, batch.Marker{Type: typ, CoordinatorEpoch: coordEpoch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantAborted(t *testing.T, l *Log, from, upper int64, want []AbortedTxn) {
	t.Helper()
	if got := l.AbortedTransactions(from, upper); !slices.Equal(got, want) {
		t.Fatalf("AbortedTransactions(%d, %d) = %+v, want %+v", from, upper, got, want)
	}
}

func wantLSO(t *testing.T, l *Log, want int64) {
	t.Helper()
	if got := l.LastStableOffset(l.LogEndOffset()); got != want {
		t.Fatalf("LastStableOffset = %d, want %d (log end %d)", got, want, l.LogEndOffset())
	}
}

// A transaction holds the last stable offset at its first offset until its
// marker; an aborted one is indexed with the range a read_committed
// consumer must drop, a committed one is not.
func TestTransactionsMoveTheLastStableOffset(t *testing.T) {
	l := openLog(t, vfs.Default, t.TempDir(), testConfig(), nil)
	defer l.Close()
	mustAppend(t, l, mkBatch(t, spec{records: 2}), 0)         // 0-1 plain
	mustAppend(t, l, txnBatch(t, 7, 0, 0, 3), 0)              // 2-4 txn of 7
	mustAppend(t, l, mkBatch(t, spec{pid: 9, records: 1}), 0) // 5 idempotent, not transactional
	mustAppend(t, l, txnBatch(t, 8, 0, 0, 2), 0)              // 6-7 txn of 8
	wantLSO(t, l, 2)
	if got := l.LastStableOffset(1); got != 1 {
		t.Fatalf("LastStableOffset(hw 1) = %d, want the high watermark", got)
	}
	mustAppend(t, l, marker(t, 7, 0, batch.ControlAbort, 3), 0) // 8 aborts 7
	wantLSO(t, l, 6)
	wantAborted(t, l, 0, 9, []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 8, LastStableOffset: 6}})
	wantAborted(t, l, 9, 10, nil)
	mustAppend(t, l, marker(t, 8, 0, batch.ControlCommit, 3), 0) // 9 commits 8
	wantLSO(t, l, 10)
	wantAborted(t, l, 0, 10, []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 8, LastStableOffset: 6}})

	// The next transaction of 7 starts at its next batch.
	mustAppend(t, l, txnBatch(t, 7, 0, 3, 1), 0) // 10
	wantLSO(t, l, 10)
}

// Markers from a fenced producer epoch or an older coordinator, and plain
// batches inside an open transaction, are refused as Kafka refuses them.
func TestTransactionFencing(t *testing.T) {
	l := openLog(t, vfs.Default, t.TempDir(), testConfig(), nil)
	defer l.Close()
	mustAppend(t, l, txnBatch(t, 7, 2, 0, 1), 0)
	if _, err := l.Append(mkBatch(t, spec{pid: 7, epoch: 2, seq: 1}), 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain batch inside a transaction: %v, want ErrInvalidTxnState", err)
	}
	if _, err := l.Append(marker(t, 7, 1, batch.ControlCommit, 5), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("marker of an old epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	mustAppend(t, l, marker(t, 7, 2, batch.ControlAbort, 5), 0)
	if _, err := l.Append(marker(t, 7, 2, batch.ControlAbort, 4), 0); !errors.Is(err, ErrCoordinatorFenced) {
		t.Fatalf("marker of an old coordinator: %v, want ErrCoordinatorFenced", err)
	}
	// A bumped epoch (the coordinator fenced the producer) is taken.
	mustAppend(t, l, marker(t, 7, 3, batch.ControlAbort, 5), 0)
	mustAppend(t, l, mkBatch(t, spec{pid: 7, epoch: 3, seq: 0}), 0)
	wantLSO(t, l, l.LogEndOffset())
}

// Transaction version 2 (KIP-890 part 2): a producer's transaction is
// open for TxnOpen only at its own epoch; the marker comes at the next
// epoch, and the next transaction's batches at it start from sequence 0.
func TestTxnOpenAtItsEpoch(t *testing.T) {
	l := openLog(t, vfs.Default, t.TempDir(), testConfig(), nil)
	defer l.Close()
	if l.TxnOpen(7, 0) {
		t.Fatal("open before any batch")
	}
	mustAppend(t, l, txnBatch(t, 7, 0, 0, 2), 0)
	if !l.TxnOpen(7, 0) || l.TxnOpen(7, 1) {
		t.Fatalf("open at epoch 0: %v, at 1: %v; want only at 0", l.TxnOpen(7, 0), l.TxnOpen(7, 1))
	}
	mustAppend(t, l, marker(t, 7, 1, batch.ControlCommit, 0), 0) // the bumped epoch
	if l.TxnOpen(7, 0) || l.TxnOpen(7, 1) {
		t.Fatal("open after the marker")
	}
	mustAppend(t, l, txnBatch(t, 7, 1, 0, 1), 0)
	if !l.TxnOpen(7, 1) {
		t.Fatal("next transaction not open at epoch 1")
	}
	if _, err := l.Append(txnBatch(t, 7, 0, 2, 1), 0); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("batch of the ended transaction's epoch: %v, want ErrInvalidProducerEpoch", err)
	}
}

// The aborted index and open transactions survive a clean close and a
// crash, across segments, and the sealed segments' indexes are Kafka's
// .txnindex files.
func TestTransactionStateSurvivesRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "clean", true: "crash"}[crash], func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			cfg.SegmentBytes = 400
			l := openLog(t, vfs.Default, dir, cfg, nil)
			var want []AbortedTxn
			seq := map[int64]int32{}
			for i := range 12 {
				pid := int64(1 + i%3)
				first := mustAppend(t, l, txnBatch(t, pid, 0, seq[pid], 2), 0).BaseOffset
				seq[pid] += 2
				if i%3 == 2 {
					continue // left open until later
				}
				typ := batch.ControlCommit
				if i%2 == 0 {
					typ = batch.ControlAbort
				}
				m := mustAppend(t, l, marker(t, pid, 0, typ, 1), 0).BaseOffset
				if typ == batch.ControlAbort {
					want = append(want, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: m})
				}
			}
			if l.Segments() < 3 {
				t.Fatalf("%d segments; the test wants several", l.Segments())
			}
			got := l.AbortedTransactions(0, l.LogEndOffset())
			if len(got) != len(want) {
				t.Fatalf("aborted %+v, want %d entries like %+v", got, len(want), want)
			}
			for i := range want {
				want[i].LastStableOffset = got[i].LastStableOffset
			}
			wantAborted(t, l, 0, l.LogEndOffset(), want)
			lso := l.LastStableOffset(l.LogEndOffset())
			if lso >= l.LogEndOffset() {
				t.Fatalf("producer 3's transaction is open, but the last stable offset is the log end %d", lso)
			}
			if crash {
				abandon(l)
			} else if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = openLog(t, vfs.Default, dir, cfg, nil)
			defer l.Close()
			wantAborted(t, l, 0, l.LogEndOffset(), want)
			wantLSO(t, l, lso)
			files, _ := filepath.Glob(filepath.Join(dir, "*"+txnIndexSuffix))
			if len(files) == 0 {
				t.Fatal("no .txnindex file for the sealed segments")
			}
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil || len(b) == 0 || len(b)%txnindex.EntrySize != 0 {
					t.Fatalf("%s: %d bytes, %v; want whole 34-byte entries", f, len(b), err)
				}
			}
			// Producer 3 commits its open transaction after the restart.
			mustAppend(t, l, marker(t, 3, 0, batch.ControlCommit, 1), 0)
			wantLSO(t, l, l.LogEndOffset())
		})
	}
}

// A truncation that cuts a marker reopens its transaction and drops its
// index entry; a follower that copies the leader's batches keeps the same
// state.
func TestTransactionStateFollowsTruncationAndReplication(t *testing.T) {
	leader := openLog(t, vfs.Default, t.TempDir(), testConfig(), nil)
	defer leader.Close()
	mustAppend(t, leader, txnBatch(t, 7, 0, 0, 2), 0)                     // 0-1
	m := mustAppend(t, leader, marker(t, 7, 0, batch.ControlAbort, 1), 0) // 2
	mustAppend(t, leader, mkBatch(t, spec{records: 1}), 0)                // 3

	follower := openLog(t, vfs.Default, t.TempDir(), testConfig(), nil)
	defer follower.Close()
	all, err := leader.Read(0, 1<<20, leader.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := follower.AppendReplicated(all); err != nil {
		t.Fatal(err)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: m.BaseOffset, LastStableOffset: 3}}
	wantAborted(t, follower, 0, 4, want)
	wantLSO(t, follower, 4)

	if err := follower.TruncateTo(m.BaseOffset); err != nil {
		t.Fatal(err)
	}
	wantAborted(t, follower, 0, 4, nil)
	wantLSO(t, follower, 0)
}

// A transaction index that cannot be read is rebuilt from the log.
func TestBadTransactionIndexIsRebuilt(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 300
	l := openLog(t, vfs.Default, dir, cfg, nil)
	mustAppend(t, l, txnBatch(t, 7, 0, 0, 2), 0)
	mustAppend(t, l, marker(t, 7, 0, batch.ControlAbort, 1), 0)
	for i := range 6 {
		mustAppend(t, l, mkBatch(t, spec{records: 1, ts: int64(i)}), 0)
	}
	want := l.AbortedTransactions(0, l.LogEndOffset())
	if len(want) != 1 || l.Segments() < 2 {
		t.Fatalf("aborted %+v in %d segments; want one in several", want, l.Segments())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+txnIndexSuffix))
	if len(files) != 1 {
		t.Fatalf("txnindex files %v, want one", files)
	}
	if err := os.WriteFile(files[0], []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, vfs.Default, dir, cfg, nil)
	defer l.Close()
	wantAborted(t, l, 0, l.LogEndOffset(), want)
}

// A producer snapshot written before transactions existed still loads.
func TestProducerSnapshotV1Loads(t *testing.T) {
	ps := producers.New()
	h := batch.Header{ProducerID: 5, ProducerEpoch: 1, BaseSequence: 0, BaseOffset: 10, LastOffsetDelta: 1, MaxTimestamp: 7}
	ps.Update(&h, batch.Marker{Type: -1})
	cur := encodeSnapshot(ps, 12)
	// The V1 layout is the current one without the two transaction fields
	// (8+4 bytes after the last timestamp) under the old magic.
	p, err := decodeFrame(magicProducer, cur)
	if err != nil {
		t.Fatal(err)
	}
	entry := 12 + 8 + 2 + 8
	v1 := append(append([]byte(nil), p[:entry]...), p[entry+12:]...)
	off, got, err := decodeSnapshot(encodeFrame(magicProducerV1, v1))
	if err != nil || off != 12 {
		t.Fatalf("decode v1: offset %d, %v", off, err)
	}
	e, ok := got.Producer(5)
	if !ok || e.Epoch != 1 || e.TxnFirst != -1 || len(e.Batches) != 1 || e.Batches[0].FirstOffset != 10 {
		t.Fatalf("v1 entry %+v", e)
	}
}
