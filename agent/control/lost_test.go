package control

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/placement"
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestLostAgents(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	states := []metadata.PartitionState{{Replicas: []int32{1, 2}}, {Replicas: []int32{2, 3}}, {Replicas: []int32{4}}}
	present := map[int32]bool{1: true, 2: true}
	// Round 1: 3 and 4 first seen absent.
	lost, since := lostAgents(states, present, nil, t0, time.Minute)
	if len(lost) != 0 || !since[3].Equal(t0) || !since[4].Equal(t0) || len(since) != 2 {
		t.Fatalf("first round: lost %v, since %v", lost, since)
	}
	// Round 2, 30 s later: 4 came back.
	present[4] = true
	lost, since = lostAgents(states, present, since, t0.Add(30*time.Second), time.Minute)
	if len(lost) != 0 || len(since) != 1 || !since[3].Equal(t0) {
		t.Fatalf("second round: lost %v, since %v", lost, since)
	}
	// Round 3, a minute after 3 left: lost. 4 leaves again and counts
	// afresh.
	delete(present, 4)
	lost, since = lostAgents(states, present, since, t0.Add(time.Minute), time.Minute)
	if !lost[3] || lost[4] || !since[4].Equal(t0.Add(time.Minute)) {
		t.Fatalf("third round: lost %v, since %v", lost, since)
	}
	// Off.
	if lost, since := lostAgents(states, present, since, t0.Add(time.Hour), 0); len(lost) != 0 || len(since) != 0 {
		t.Fatalf("replacement off: lost %v, since %v", lost, since)
	}
}

// lostCluster is a balancer (agent 9) over one topic whose partitions are
// all peers, with agents 0, 1 and 2 active and agent 5 gone from gossip.
func lostCluster(t *testing.T, assignment [][]int32, unclean bool) (*Controller, *fakeHost, *metadata.Store, time.Time) {
	t.Helper()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := metadata.New(objstore.NewMem(), logger)
	if _, err := store.InitCluster(ctx); err != nil {
		t.Fatal(err)
	}
	top, err := store.CreateTopic(ctx, "t", int32(len(assignment)), assignment, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := &fakeHost{live: []int32{0, 1, 2}}
	host.topic = &dataplane.Topic{Name: "t", ID: top.ID, PartitionCount: int32(len(assignment)), ReplicationFactor: int16(len(assignment[0])),
		Resolved: metadata.Resolved{UncleanLeaderElection: unclean}}
	for i := range int32(len(assignment)) {
		st, _, err := store.PartitionState(ctx, top.ID, i)
		if err != nil {
			t.Fatal(err)
		}
		p := partition.NewPeer(i, st)
		host.peers = append(host.peers, p)
		host.topic.Partitions = append(host.topic.Partitions, p)
	}
	members := &fakeMembers{self: membership.Member{ID: 9, State: membership.StateJoining},
		others: []membership.Member{{ID: 0, State: membership.StateActive}, {ID: 1, State: membership.StateActive}, {ID: 2, State: membership.StateActive}}}
	t0 := time.Unix(1_000_000, 0)
	cfg := Config{AutoRebalance: true, RebalanceSettle: 30 * time.Second, RebalanceMaxMoves: 10, RebalanceMaxMovesPerAgent: 10,
		ReplicaLagTimeMax: time.Second, ReconcileInterval: time.Second, ReplaceDeadAgentAfter: 5 * time.Minute}
	c := New(9, cfg, store, host, nil, prometheus.NewRegistry(), logger, t0)
	c.SetMembers(members)
	return c, host, store, t0
}

func states(t *testing.T, store *metadata.Store, host *fakeHost) []metadata.PartitionState {
	t.Helper()
	var out []metadata.PartitionState
	for i := range host.topic.PartitionCount {
		st, _, err := store.PartitionState(context.Background(), host.topic.ID, i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

// TestLostAgentReplicasMove: replicas on an agent gone from gossip stay
// put for --replace-dead-agent-after, then move to live agents through
// ordinary reassignments that keep the live replicas; leaders are
// untouched (the live leader carries the move out).
func TestLostAgentReplicasMove(t *testing.T) {
	for _, byLoad := range []bool{false, true} {
		t.Run(fmt.Sprint("by load ", byLoad), func(t *testing.T) { testLostAgentReplicasMove(t, byLoad) })
	}
}

// byLoad makes c place by load, the live agents reporting partition hot
// of host's topic at ten times the others' rate.
func byLoad(t *testing.T, c *Controller, store *metadata.Store, host *fakeHost, hot int32, now time.Time) {
	t.Helper()
	c.cfg.RebalanceByLoad, c.cfg.LoadBalance, c.cfg.LoadReportInterval = true, placement.DefaultBalance(), 30*time.Second
	reports := map[int32]*metadata.AgentLoad{}
	for i, p := range host.peers {
		st := p.State()
		in := float64(100 << 10)
		if int32(i) == hot {
			in *= 10
		}
		for _, r := range st.Replicas {
			if reports[r] == nil {
				reports[r] = &metadata.AgentLoad{AgentID: r, WrittenAt: now}
			}
			reports[r].Partitions = append(reports[r].Partitions, metadata.PartitionLoad{TopicID: host.topic.ID, Partition: int32(i),
				Leader: r == st.Leader, RoleAge: time.Hour, BytesIn: in, LocalBytes: 1 << 20})
		}
	}
	for _, r := range reports {
		if err := store.PutAgentLoad(context.Background(), *r); err != nil {
			t.Fatal(err)
		}
	}
}

func testLostAgentReplicasMove(t *testing.T, placeByLoad bool) {
	ctx := context.Background()
	// Agent 5 held a replica of each partition; elections already gave
	// the partitions it led to the other replica.
	c, host, store, t0 := lostCluster(t, [][]int32{{0, 5}, {1, 5}, {5, 2}}, false)
	for i, p := range host.peers {
		st := p.State()
		st.Leader, st.ISR = st.Replicas[0], []int32{st.Replicas[0]}
		if st.Replicas[0] == 5 {
			st.Leader, st.ISR = 2, []int32{2}
		}
		if _, err := store.CASPartitionState(ctx, host.topic.ID, int32(i), st, ""); err == nil {
			t.Fatal("a CAS with no ETag must not succeed")
		}
		_, etag, err := store.PartitionState(ctx, host.topic.ID, int32(i))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.CASPartitionState(ctx, host.topic.ID, int32(i), st, etag); err != nil {
			t.Fatal(err)
		}
		p.SetState(st)
	}
	if placeByLoad {
		byLoad(t, c, store, host, 0, t0)
	}
	for _, at := range []time.Duration{time.Second, 4 * time.Minute, 5 * time.Minute} {
		c.BalanceOnce(ctx, t0.Add(at))
		if n := moving(t, store, host.topic.ID, 3); n != 0 {
			t.Fatalf("at t0+%v, before the agent counts as lost: %d partitions moving", at, n)
		}
	}
	c.BalanceOnce(ctx, t0.Add(5*time.Minute+time.Second))
	for i, st := range states(t, store, host) {
		if !st.Moving() || slices.Contains(st.Target, 5) || len(st.Target) != 2 {
			t.Fatalf("partition %d after agent 5 was lost: %+v, want a move to two live agents", i, st)
		}
		if before := host.peers[i].State(); !slices.Contains(st.Target, before.Leader) || st.Leader != before.Leader {
			t.Fatalf("partition %d: the move %v drops its live leader %d (state %+v)", i, st.Target, before.Leader, st)
		}
	}
}

// TestLostAgentHeadlessPartition: a partition whose only replica was on a
// lost agent gets a new replica leading in a new epoch when the topic
// allows unclean leader election, and stays offline otherwise.
func TestLostAgentHeadlessPartition(t *testing.T) {
	for _, mode := range []struct{ unclean, byLoad bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		unclean := mode.unclean
		ctx := context.Background()
		c, host, store, t0 := lostCluster(t, [][]int32{{5}, {0}}, unclean)
		if mode.byLoad {
			byLoad(t, c, store, host, 1, t0)
		}
		before := host.peers[0].State()
		c.BalanceOnce(ctx, t0.Add(time.Second))
		c.BalanceOnce(ctx, t0.Add(5*time.Minute+2*time.Second))
		st := states(t, store, host)[0]
		if !unclean {
			if !slices.Equal(st.Replicas, []int32{5}) || st.Moving() {
				t.Fatalf("without unclean election: %+v, want it left on agent 5", st)
			}
			continue
		}
		if st.Moving() || len(st.Replicas) != 1 || st.Replicas[0] == 5 || st.Leader != st.Replicas[0] ||
			!slices.Equal(st.ISR, st.Replicas) || st.LeaderEpoch != before.LeaderEpoch+1 {
			t.Fatalf("with unclean election: %+v, want a live replica leading in epoch %d", st, before.LeaderEpoch+1)
		}
	}
}
