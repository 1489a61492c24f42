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
