package agent

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/peer"
)

// TestTxnRemotePeerConnectionsPooled: transactions whose coordinator runs
// on another agent than their partition's leader cross between the two
// agents twice each — the leader adds the partition at the coordinator
// (AddPartitionsToTxn v5, transaction version 2) and the coordinator
// writes the marker at the leader (WriteTxnMarkers) — on pooled
// connections: over n transactions the two agents accept at most a
// pool's worth of new connections, not one or two per transaction.
func TestTxnRemotePeerConnectionsPooled(t *testing.T) {
	const n = 20
	c := startTxnCluster(t, 3, nil)
	c.create("txn-pool", 3, 1, nil)
	cl := c.client(kgo.TransactionalID("tx-pool"), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), tv2ClientOpts())
	// The first transaction creates __transaction_state, connects the
	// client to every agent and fills the pools between them.
	commitOne(t, cl, "txn-pool", 3)
	coord := c.leaderOf(txnTopic, 0)
	target := int32(-1)
	for i := range int32(3) {
		if c.leaderOf("txn-pool", i) != coord {
			target = i
			break
		}
	}
	if target < 0 {
		t.Skip("every partition is led by the coordinator's agent")
	}
	leader := c.leaderOf("txn-pool", target)
	commit := func(i int) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: "txn-pool", Partition: target, Value: []byte{byte(i)}}
		if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if err := cl.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	accepted := func() float64 {
		return counterValue(t, c.agents[coord], "strata_kafka_connections_accepted_total") +
			counterValue(t, c.agents[leader], "strata_kafka_connections_accepted_total")
	}
	before := accepted()
	for i := range n {
		commit(i)
	}
	p := localPartition(c.agents[leader], "txn-pool", target)
	waitStable(t, p)
	if got := len(markers(readLog(t, p))); got != n+1 {
		t.Fatalf("%d markers on the leader, want %d: the coordinator did not reach it", got, n+1)
	}
	if dials := counterValue(t, c.agents[coord], "strata_inter_agent_pool_dials_total"); dials < 1 {
		t.Fatal("the coordinator dialled no pooled connection: the markers did not travel between agents")
	}
	if dials := counterValue(t, c.agents[leader], "strata_inter_agent_pool_dials_total"); dials < 1 {
		t.Fatal("the leader dialled no pooled connection: the partitions were not added remotely")
	}
	bound := float64(peer.DefaultPoolConfig().MaxConnsPerPeer)
	grew := accepted() - before
	t.Logf("%d remote transactions: %v connections accepted by the coordinator and the leader", n, grew)
	if grew > bound {
		t.Fatalf("%d remote transactions made the coordinator and the leader accept %v connections, want at most %v",
			n, grew, bound)
	}
}
