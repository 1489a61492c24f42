package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/testwait"
)

// txnConfig is a test agent with few coordinator partitions, which load
// fast.
func txnConfig(t *testing.T) Config {
	cfg := testConfig(t.TempDir())
	cfg.OffsetsTopicPartitions = 3
	cfg.TransactionStatePartitions = 3
	cfg.TransactionAbortCheckInterval = 100 * time.Millisecond
	return cfg
}

// logEntry is one batch of a partition's log as the tests see it: the
// values of a data batch, or the marker of a control batch.
type logEntry struct {
	offset     int64
	producerID int64
	epoch      int16
	control    bool
	marker     batch.ControlType
	values     []string
}

// readLog returns every batch of p below its high watermark.
func readLog(t *testing.T, p *partition.Partition) []logEntry {
	t.Helper()
	var out []logEntry
	for offset := p.LogStartOffset(); offset < p.HighWatermark(); {
		raw, err := p.Read(ctxT(t), offset, 1<<20, true)
		if err != nil {
			t.Fatalf("read %s-%d at %d: %v", p.Topic(), p.Index(), offset, err)
		}
		if len(raw) == 0 {
			break
		}
		if _, err := batch.Split(raw, func(h batch.Header, b []byte) error {
			offset = h.LastOffset() + 1
			e := logEntry{offset: h.BaseOffset, producerID: h.ProducerID, epoch: h.ProducerEpoch, control: h.IsControl()}
			if e.control {
				m, err := batch.ParseMarker(b)
				if err != nil {
					return err
				}
				e.marker = m.Type
			} else {
				_, recs, err := batch.Records(b, 1<<20)
				if err != nil {
					return err
				}
				for _, r := range recs {
					e.values = append(e.values, string(r.Value))
				}
			}
			out = append(out, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// markers returns the markers of p's log, in order.
func markers(entries []logEntry) []batch.ControlType {
	var out []batch.ControlType
	for _, e := range entries {
		if e.control {
			out = append(out, e.marker)
		}
	}
	return out
}

// committedValues splits the values of p's log into those a
// read_committed consumer reads and those of aborted transactions, by the
// log's aborted-transactions index.
func committedValues(t *testing.T, p *partition.Partition) (committed, aborted []string) {
	t.Helper()
	entries := readLog(t, p)
	abortedTxns := p.LocalLog().AbortedTransactions(0, p.HighWatermark())
	for _, e := range entries {
		if e.control {
			continue
		}
		drop := false
		for _, a := range abortedTxns {
			if a.ProducerID == e.producerID && e.offset >= a.FirstOffset && e.offset <= a.LastOffset {
				drop = true
			}
		}
		if drop {
			aborted = append(aborted, e.values...)
		} else {
			committed = append(committed, e.values...)
		}
	}
	return committed, aborted
}

func txnClient(t *testing.T, r *running, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return r.client(t, append([]kgo.Opt{kgo.TransactionalID(id), kgo.TransactionTimeout(20 * time.Second),
		kgo.RecordRetries(3)}, opts...)...)
}

func produceInTxn(t *testing.T, cl *kgo.Client, topic string, values ...string) error {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			return err
		}
	}
	return nil
}

// waitStable waits until p has no open transaction (every marker landed)
// and its high watermark covers its whole log.
func waitStable(t *testing.T, p *partition.Partition) {
	t.Helper()
	testwait.Until(t, 20*time.Second, func() bool {
		hw := p.HighWatermark()
		return hw == p.LogEndOffset() && p.LocalLog().LastStableOffset(hw) == hw
	}, "%s-%d to have no open transaction", p.Topic(), p.Index())
}

// TestTxnCommitAndAbort: a transactional producer commits one
// transaction and aborts the next; the coordinator writes a COMMIT and
// then an ABORT marker to the partition, and only the committed record
// is outside an aborted transaction.
func TestTxnCommitAndAbort(t *testing.T) {
	r := start(t, txnConfig(t), nil)
	admin := r.client(t)
	createTopic(t, admin, "txn-out", 1, nil)
	cl := txnClient(t, r, "tx-commit-abort")
	if err := produceInTxn(t, cl, "txn-out", "committed-1", "committed-2"); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := produceInTxn(t, cl, "txn-out", "aborted-1"); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctxT(t), kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	p := localPartition(r, "txn-out", 0)
	testwait.Until(t, 20*time.Second, func() bool { return len(markers(readLog(t, p))) == 2 }, "two markers")
	waitStable(t, p)
	if got := markers(readLog(t, p)); !slices.Equal(got, []batch.ControlType{batch.ControlCommit, batch.ControlAbort}) {
		t.Fatalf("markers %v, want commit then abort", got)
	}
	committed, aborted := committedValues(t, p)
	if !slices.Equal(committed, []string{"committed-1", "committed-2"}) || !slices.Equal(aborted, []string{"aborted-1"}) {
		t.Fatalf("committed %q aborted %q", committed, aborted)
	}
	if got := readToStable(t, r, "txn-out", 0); !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %q, want %q", got, committed)
	}
	if st, ok := r.Topic(txnTopic); !ok || !st.Internal || st.Configs[metadata.CleanupPolicy] != "compact" {
		t.Fatalf("%s: %+v, want an internal compacted topic", txnTopic, st)
	}
	// The coordinator's view, through kadm. Its CompleteAbort record
	// follows the markers' acknowledgement, so it may trail them.
	adm := kadm.NewClient(admin)
	var described kadm.DescribedTransaction
	testwait.Until(t, 20*time.Second, func() bool {
		d, err := adm.DescribeTransactions(ctxT(t), "tx-commit-abort")
		if err != nil {
			t.Fatal(err)
		}
		described = d["tx-commit-abort"]
		return described.Err == nil && described.State == "CompleteAbort"
	}, "the coordinator to complete the abort")
	if len(described.Topics) != 0 {
		t.Fatalf("described %+v", described)
	}
	listed, err := adm.ListTransactions(ctxT(t), nil, []string{"CompleteAbort"})
	if err != nil {
		t.Fatal(err)
	}
	if ids := listed.TransactionalIDs(); !slices.Equal(ids, []string{"tx-commit-abort"}) {
		t.Fatalf("listed %q", ids)
	}
}

// TestTxnFencing: a second producer with the same transactional id bumps
// the epoch, which aborts the first's open transaction; the first's later
// produce and commit fail as fenced and its records never commit.
func TestTxnFencing(t *testing.T) {
	r := start(t, txnConfig(t), nil)
	admin := r.client(t)
	createTopic(t, admin, "txn-fence", 1, nil)
	first := txnClient(t, r, "tx-fence")
	if err := produceInTxn(t, first, "txn-fence", "zombie-1"); err != nil {
		t.Fatal(err)
	}
	second := txnClient(t, r, "tx-fence")
	if err := produceInTxn(t, second, "txn-fence", "fresh-1"); err != nil {
		t.Fatal(err)
	}
	if err := second.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	// The zombie keeps going: its produce is refused at its old epoch.
	err := first.ProduceSync(ctxT(t), &kgo.Record{Topic: "txn-fence", Value: []byte("zombie-late")}).FirstErr()
	if !isFenced(err) {
		t.Fatalf("zombie produce: %v, want fenced", err)
	}
	if err := first.EndTransaction(ctxT(t), kgo.TryCommit); err == nil {
		t.Fatal("zombie commit succeeded")
	}
	p := localPartition(r, "txn-fence", 0)
	waitStable(t, p)
	committed, aborted := committedValues(t, p)
	if !slices.Equal(committed, []string{"fresh-1"}) || !slices.Equal(aborted, []string{"zombie-1"}) {
		t.Fatalf("committed %q aborted %q", committed, aborted)
	}
	if got := readToStable(t, r, "txn-fence", 0); !slices.Equal(got, committed) {
		t.Fatalf("read_committed read %q, want %q", got, committed)
	}
}

func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// TestTxnTimeout: a transaction left open past transaction.timeout.ms is
// aborted by its coordinator at a new epoch, so the partition's last
// stable offset moves past it and the producer that left it is fenced. A
// timeout above --transaction-max-timeout is refused.
func TestTxnTimeout(t *testing.T) {
	cfg := txnConfig(t)
	cfg.TransactionMaxTimeout = time.Minute
	r := start(t, cfg, nil)
	createTopic(t, r.client(t), "txn-hung", 1, nil)
	tooLong := r.client(t, kgo.TransactionalID("tx-too-long"), kgo.TransactionTimeout(2*time.Minute))
	err := tooLong.BeginTransaction() // kgo initializes its producer id here
	if err == nil {
		err = tooLong.ProduceSync(ctxT(t), &kgo.Record{Topic: "txn-hung", Value: []byte("never")}).FirstErr()
	}
	if err == nil || !strings.Contains(err.Error(), kerr.InvalidTransactionTimeout.Message) {
		t.Fatalf("produce with a 2m timeout: %v, want INVALID_TRANSACTION_TIMEOUT", err)
	}
	hung := r.client(t, kgo.TransactionalID("tx-hung"), kgo.TransactionTimeout(time.Second))
	if err := produceInTxn(t, hung, "txn-hung", "hung-1"); err != nil {
		t.Fatal(err)
	}
	p := localPartition(r, "txn-hung", 0)
	if hw := p.HighWatermark(); p.LocalLog().LastStableOffset(hw) != 0 {
		t.Fatalf("last stable offset %d with the transaction open, want 0", p.LocalLog().LastStableOffset(hw))
	}
	testwait.Until(t, 20*time.Second, func() bool { return len(markers(readLog(t, p))) == 1 }, "the timeout's abort marker")
	waitStable(t, p)
	if got := markers(readLog(t, p)); got[0] != batch.ControlAbort {
		t.Fatalf("marker %v, want abort", got)
	}
	if hw := p.HighWatermark(); p.LocalLog().LastStableOffset(hw) != hw || hw < 2 {
		t.Fatalf("last stable offset %d, high watermark %d", p.LocalLog().LastStableOffset(hw), hw)
	}
	if err := hung.EndTransaction(ctxT(t), kgo.TryCommit); err == nil {
		t.Fatal("the timed-out producer committed")
	}
	if _, aborted := committedValues(t, p); !slices.Equal(aborted, []string{"hung-1"}) {
		t.Fatalf("aborted %q, want the hung record", aborted)
	}
}

// readToStable reads a partition at read_committed from its leader, as a
// consumer does, exactly up to the last stable offset: without the
// records of aborted transactions (the Fetch's aborted_transactions,
// applied by kgo).
// readStable is readToStable once it returns at least n values, waited
// for (bounded): a commit's markers land after EndTxn's answer, so the
// stable offset may trail it.
func readStable(t *testing.T, leader *running, topic string, partition int32, n int) []string {
	t.Helper()
	var got []string
	testwait.Until(t, 20*time.Second, func() bool {
		got = readToStable(t, leader, topic, partition)
		return len(got) >= n
	}, "%d records below the stable offset of %s-%d", n, topic, partition)
	return got
}

func readToStable(t *testing.T, leader *running, topic string, partition int32) []string {
	t.Helper()
	cl := leader.client(t)
	var out []string
	offset := int64(0)
	for range 1000 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = 0, 1, 1<<20, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, err := toSeed(t, cl, req)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fp := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if fp.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: %v", topic, partition, offset, kerr.ErrorForCode(fp.ErrorCode))
		}
		if offset >= fp.LastStableOffset {
			return out
		}
		// Control records are kept only to move past them.
		fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: partition,
			Offset: offset, IsolationLevel: kgo.ReadCommitted(), KeepControlRecords: true}, &fp, kgo.DefaultDecompressor(), nil)
		if fetched.Err != nil {
			t.Fatalf("decode fetch: %v", fetched.Err)
		}
		next := offset
		for _, r := range fetched.Records {
			if !r.Attrs.IsControl() {
				out = append(out, string(r.Value))
			}
			next = r.Offset + 1
		}
		if next == offset {
			// Only aborted batches came back: skip past the last batch.
			next = lastBatchEnd(t, fp.RecordBatches, offset)
		}
		offset = next
	}
	t.Fatal("read_committed did not reach the last stable offset in 1000 fetches")
	return nil
}

// lastBatchEnd is the offset after the last batch of raw, at least from.
func lastBatchEnd(t *testing.T, raw []byte, from int64) int64 {
	t.Helper()
	end := from
	if _, err := batch.Split(raw, func(h batch.Header, _ []byte) error {
		end = max(end, h.LastOffset()+1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return end
}
