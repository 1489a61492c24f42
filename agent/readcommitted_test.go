package agent

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/partition"
)

// txnWriter writes transactional batches and markers straight into a
// partition leader, as producers and the transaction coordinator would,
// so that the read side is tested on its own with a real consumer.
type txnWriter struct {
	t   *testing.T
	p   *partition.Partition
	seq map[int64]int32
}

func (w *txnWriter) append(raw []byte) int64 {
	w.t.Helper()
	res, wait, err := w.p.Append(raw, 1)
	if err == nil {
		err = wait(ctxT(w.t))
	}
	if err != nil {
		w.t.Fatalf("append: %v", err)
	}
	return res.BaseOffset
}

// data writes one record with value v, transactional for pid >= 0.
func (w *txnWriter) data(pid int64, v string) int64 {
	w.t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	if pid >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, 0, w.seq[pid]
		opts.Attributes = batch.AttrTransactional
		w.seq[pid]++
	}
	raw, err := batch.Build(opts, []batch.Record{{Value: []byte(v)}})
	if err != nil {
		w.t.Fatal(err)
	}
	return w.append(raw)
}

func (w *txnWriter) end(pid int64, commit bool) {
	w.t.Helper()
	typ := batch.ControlAbort
	if commit {
		typ = batch.ControlCommit
	}
	raw, err := batch.BuildMarker(pid, 0, batch.Marker{Type: typ, CoordinatorEpoch: 0}, time.Now().UnixMilli())
	if err != nil {
		w.t.Fatal(err)
	}
	w.append(raw)
}

// writeTransactions writes rounds of two interleaved transactions and a
// plain record, committing or aborting each by its round, and returns the
// values a read_committed consumer must see, in order.
func (w *txnWriter) writeTransactions(rounds int) []string {
	var want []string
	pad := string(bytes.Repeat([]byte{'.'}, 150))
	for i := range rounds {
		a, b := int64(1000+2*i), int64(1001+2*i)
		commitA, commitB := i%3 != 0, i%2 == 0
		va1, vp, vb, va2 := fmt.Sprintf("a%d-1%s", i, pad), fmt.Sprintf("p%d%s", i, pad), fmt.Sprintf("b%d%s", i, pad), fmt.Sprintf("a%d-2%s", i, pad)
		w.data(a, va1)
		w.data(-1, vp)
		w.data(b, vb)
		w.data(a, va2)
		w.end(a, commitA)
		w.end(b, commitB)
		for _, r := range []struct {
			v  string
			ok bool
		}{{va1, commitA}, {vp, true}, {vb, commitB}, {va2, commitA}} {
			if r.ok {
				want = append(want, r.v)
			}
		}
	}
	return want
}

// readCommitted consumes the partition at read_committed from offset 0
// until it has n records or idle passes with nothing new.
func readCommitted(t *testing.T, a *running, topic string, n int, idle time.Duration) []string {
	t.Helper()
	cl := a.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxBytes(64<<10))
	var got []string
	last := time.Now()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if len(got) >= n && time.Since(last) > idle {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if e.Err != context.DeadlineExceeded {
				t.Fatalf("fetch: %v", e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			last = time.Now()
		})
	}
	return got
}

func checkValues(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d records, want %d; first difference at %d", what, len(got), len(want), i)
	}
}

func stableOffset(t *testing.T, a *running, topic string) int64 {
	t.Helper()
	offs, err := kadm.NewClient(a.client(t)).ListCommittedOffsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offs.Lookup(topic, 0)
	return o.Offset
}

// TestReadCommitted: a read_committed consumer (franz-go) sees every
// committed record and no aborted one, in offset order, and nothing at or
// after an open transaction until it commits; ListOffsets at
// read_committed answers the last stable offset. On a tiered topic the
// same holds for records read back from the bucket (fs and MinIO), whose
// segments carry their transaction indexes.
func TestReadCommitted(t *testing.T) {
	t.Run("local", func(t *testing.T) {
		a := start(t, testConfig(t.TempDir()), nil)
		createTopic(t, a.client(t), "txn", 1, nil)
		testReadCommitted(t, a, "txn", 20)
	})
	t.Run("tiered", func(t *testing.T) {
		forEachStore(t, func(t *testing.T, newStore func() string) {
			store := newStore()
			a := start(t, tieringTestConfig(t, filepath.Join(t.TempDir(), "data"), store), nil)
			createTopic(t, a.client(t), "txn", 1, tieredTopicConfigs)
			testReadCommitted(t, a, "txn", 300)
			checkBucket(t, store, 20)
		})
	})
}

func testReadCommitted(t *testing.T, a *running, topic string, rounds int) {
	w := &txnWriter{t: t, p: localPartition(a, topic, 0), seq: map[int64]int32{}}
	want := w.writeTransactions(rounds)
	if a.tier != nil && rounds > 100 {
		waitTiered(t, a, topic, 16384+2*8192)
	}
	// An open transaction holds read_committed consumers back, with the
	// plain record after it.
	open := w.data(9999, "open")
	w.data(-1, "after-open")
	if got := stableOffset(t, a, topic); got != open {
		t.Fatalf("read_committed end offset %d, want the open transaction's first offset %d", got, open)
	}
	checkValues(t, "read_committed with a transaction open", readCommitted(t, a, topic, len(want), time.Second), want)
	// DescribeProducers (what kafka-transactions.sh find-hanging reads)
	// shows the open transaction.
	described, err := kadm.NewClient(a.client(t)).DescribeProducers(ctxT(t), kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var openSeen bool
	for _, d := range described.SortedProducers() {
		switch {
		case d.ProducerID == 9999:
			openSeen = d.CurrentTxnStartOffset == open && d.LastSequence == 0
		case d.CurrentTxnStartOffset != -1:
			t.Fatalf("producer %d reported with a transaction open at %d", d.ProducerID, d.CurrentTxnStartOffset)
		}
	}
	if !openSeen {
		t.Fatalf("DescribeProducers does not show producer 9999's transaction open at %d: %+v", open, described.SortedProducers())
	}

	w.end(9999, true)
	want = append(want, "open", "after-open")
	checkValues(t, "read_committed after the commit", readCommitted(t, a, topic, len(want), 500*time.Millisecond), want)
	if got, end := stableOffset(t, a, topic), localPartition(a, topic, 0).HighWatermark(); got != end {
		t.Fatalf("read_committed end offset %d after the commit, want the high watermark %d", got, end)
	}
}
