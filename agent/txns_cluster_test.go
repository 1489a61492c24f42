package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/testwait"
)

// startTxnCluster starts n agents as startCluster does, with one
// __transaction_state and one __consumer_offsets partition (so one
// agent coordinates everything), whose transaction coordinators ask
// beforeMarkers before writing a transaction's markers.
func startTxnCluster(t *testing.T, n int, beforeMarkers func(string) bool) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir()}
	c.store = "file://" + filepath.Join(c.dir, "store")
	for i := range n {
		cfg := clusterConfig(filepath.Join(c.dir, fmt.Sprint("agent", i)), c.store)
		cfg.TransactionStatePartitions, cfg.OffsetsTopicPartitions = 1, 1
		cfg.TransactionAbortCheckInterval = 100 * time.Millisecond
		if i > 0 {
			cfg.Gossip.Join = []string{c.agents[0].members.Self().GossipAddr}
		}
		a, err := New(t.Context(), cfg, Options{Logger: quiet, TxnBeforeMarkers: beforeMarkers})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		c.cfgs = append(c.cfgs, cfg)
		c.agents = append(c.agents, runAgent(t, a))
	}
	c.waitMembers(n)
	return c
}

// TestTxnCoordinatorFailover: the coordinator's agent stops after
// PrepareCommit is durable and before any marker is written; the agent
// that leads __transaction_state next replays it and writes the commit
// markers to every partition of the transaction.
func TestTxnCoordinatorFailover(t *testing.T) {
	var hold atomic.Bool
	hold.Store(true)
	c := startTxnCluster(t, 3, func(string) bool { return !hold.Load() })
	c.create("txn-fo", 3, 3, nil)
	cl := c.client(kgo.TransactionalID("tx-failover"), kgo.TransactionTimeout(time.Minute), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range int32(3) {
		r := &kgo.Record{Topic: "txn-fo", Partition: i, Value: fmt.Appendf(nil, "v%d", i)}
		if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	// Answered once PrepareCommit is durable; the markers are held.
	if err := cl.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	coord := c.leaderOf(txnTopic, 0)
	for i := range int32(3) {
		p := localPartition(c.agents[c.leaderOf("txn-fo", i)], "txn-fo", i)
		if hw := p.HighWatermark(); p.LocalLog().LastStableOffset(hw) == hw {
			t.Fatalf("txn-fo-%d is stable before any marker", i)
		}
	}
	c.agents[coord].stop(t)
	hold.Store(false)
	next := c.leaderOf(txnTopic, 0)
	if next == coord {
		t.Fatalf("agent %d still leads %s", coord, txnTopic)
	}
	for i := range int32(3) {
		p := localPartition(c.agents[c.leaderOf("txn-fo", i)], "txn-fo", i)
		testwait.Until(t, 20*time.Second, func() bool { return len(markers(readLog(t, p))) > 0 }, "a marker in txn-fo-%d", i)
		waitStable(t, p)
		if got := markers(readLog(t, p)); !slices.Equal(got, []batch.ControlType{batch.ControlCommit}) {
			t.Fatalf("txn-fo-%d markers %v, want one commit", i, got)
		}
	}
	adm := kadm.NewClient(c.client())
	testwait.Until(t, 20*time.Second, func() bool {
		d, err := adm.DescribeTransactions(ctxT(t), "tx-failover")
		if err != nil {
			return false
		}
		s, ok := d["tx-failover"]
		return ok && s.Err == nil && s.State == "CompleteCommit"
	}, "tx-failover to be CompleteCommit on the new coordinator")
}

// TestTxnConsumeTransformProduce is franz-go's exactly-once pattern on
// three agents: a GroupTransactSession moves every record of topic A to
// topic B, committing its group's offsets in each transaction and
// aborting every third one (whose records it then reads again); an agent
// that coordinates nothing is stopped midway. Afterwards B, read at
// read_committed, holds every input once (and its log holds aborted
// records too), and the group's committed offsets are A's ends.
func TestTxnConsumeTransformProduce(t *testing.T) {
	c := startTxnCluster(t, 3, nil)
	c.create("ctp-a", 2, 3, nil)
	c.create("ctp-b", 1, 3, nil)
	const n = 300
	in := c.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	for i := range n {
		if err := in.ProduceSync(ctxT(t), &kgo.Record{Topic: "ctp-a", Value: fmt.Appendf(nil, "%04d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var seeds []string
	for _, a := range c.agents {
		seeds = append(seeds, a.KafkaAddr().String())
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seeds...), kgo.TransactionalID("ctp"),
		kgo.TransactionTimeout(30*time.Second), kgo.ConsumerGroup("ctp-group"), kgo.ConsumeTopics("ctp-a"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(), kgo.FetchMaxPartitionBytes(600),
		kgo.DefaultProduceTopic("ctp-b"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	// Stop an agent that neither coordinates the transaction nor the
	// group (one partition each, led by the same agent or two).
	spare := -1
	ctx := ctxT(t)
	committed, rounds := 0, 0
	for committed < n {
		rounds++
		if rounds > 500 {
			t.Fatalf("%d records committed after 500 rounds", committed)
		}
		if rounds == 5 {
			txnLeader, groupLeader := c.leaderOf(txnTopic, 0), c.leaderOf(offsetsTopic, 0)
			for i := range c.agents {
				if i != txnLeader && i != groupLeader {
					spare = i
				}
			}
			if spare >= 0 {
				c.agents[spare].stop(t)
			}
		}
		fetches := sess.PollRecords(ctx, 50)
		if err := fetches.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		for _, r := range recs {
			// A failed produce makes End abort; an abort fails the
			// records still buffered. Either way End's answer counts.
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil)
		}
		abort := rounds%3 == 0
		if abort {
			// Written first, so that the abort has records to abort.
			if err := sess.Client().Flush(ctx); err != nil {
				t.Fatalf("flush: %v", err)
			}
		}
		ok, err := sess.End(ctx, kgo.TransactionEndTry(!abort))
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if ok && !abort {
			committed += len(recs)
		}
	}
	t.Logf("stopped agent index %d (-1: none; the coordinators were on all three); %d rounds", spare, rounds)
	bLeader := c.agents[c.leaderOf("ctp-b", 0)]
	b := localPartition(bLeader, "ctp-b", 0)
	waitStable(t, b)
	_, aborted := committedValues(t, b)
	got := readToStable(t, bLeader, "ctp-b", 0)
	slices.Sort(got)
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("%04d", i)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("B holds %d committed records (want %d once each); first %q", len(got), n, got[:min(len(got), 10)])
	}
	if len(aborted) == 0 {
		t.Fatal("no aborted transaction reached B")
	}
	adm := kadm.NewClient(c.client())
	ends, err := adm.ListEndOffsets(ctx, "ctp-a")
	if err != nil {
		t.Fatal(err)
	}
	// The last commit's marker reaches __consumer_offsets after EndTxn
	// answers; until then the offsets it commits are pending.
	var msg string
	if !testwait.Poll(20*time.Second, func() bool {
		offsets, err := adm.FetchOffsets(ctx, "ctp-group")
		if err != nil {
			msg = err.Error()
			return false
		}
		msg = ""
		ends.Each(func(o kadm.ListedOffset) {
			if got, _ := offsets.Lookup("ctp-a", o.Partition); got.At != o.Offset {
				msg += fmt.Sprintf("ctp-a-%d at %d, its end %d; ", o.Partition, got.At, o.Offset)
			}
		})
		return msg == ""
	}) {
		t.Fatalf("committed offsets are not A's ends: %s", msg)
	}
}
