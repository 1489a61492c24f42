package control

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/placement"
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestMergeLoads: a partition's load is its settled leader's newest
// report, else the one remembered from a settled leader, else an
// unsettled leader's, else a settled follower's bytes in; a remembered
// load outlives the reports that listed it for loadMemory.
func TestMergeLoads(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	topic := [16]byte{1, 15: 1}
	k := func(p int32) Key { return Key{topic, p} }
	entry := func(p int32, leader bool, role time.Duration, in, out float64) metadata.PartitionLoad {
		return metadata.PartitionLoad{TopicID: topic, Partition: p, Leader: leader, RoleAge: role, BytesIn: in, BytesOut: out, LocalBytes: int64(in)}
	}
	settled, young := 2*loadSettled, time.Second
	reports := []metadata.AgentLoad{
		{AgentID: 0, WrittenAt: t0.Add(-20 * time.Second), Partitions: []metadata.PartitionLoad{
			entry(0, true, settled, 100, 50),  // settled leader
			entry(1, true, settled, 200, 80),  // a stale report of the old leader...
			entry(3, false, settled, 400, 0),  // a settled follower
			entry(4, false, young, 900, 0),    // a follower still copying
			entry(5, true, young, 1000, 1000), // young, but will be settled by now
		}},
		{AgentID: 1, WrittenAt: t0, Partitions: []metadata.PartitionLoad{
			entry(0, false, settled, 110, 0),
			entry(1, true, young, 210, 5),   // ...and the new one, not settled yet
			entry(2, true, young, 300, 20),  // only an unsettled leader
			entry(3, false, young, 5000, 0), // a copying follower is ignored
		}},
	}
	// Partition 5's report was written 20 s ago, a second into its role:
	// not settled by now. Partition 6 is remembered from an earlier round.
	memory := map[Key]rememberedLoad{
		k(6): {load: placement.Load{BytesIn: 60}, at: t0.Add(-time.Minute)},
		k(7): {load: placement.Load{BytesIn: 70}, at: t0.Add(-loadMemory)}, // expired
		k(2): {load: placement.Load{BytesIn: 290, BytesOut: 30}, at: t0.Add(-time.Minute)},
	}
	loads, next := mergeLoads(reports, memory, t0)
	want := map[Key]placement.Load{
		k(0): {BytesIn: 100, BytesOut: 50, DiskBytes: 100},
		k(1): {BytesIn: 200, BytesOut: 80, DiskBytes: 200},
		k(2): {BytesIn: 290, BytesOut: 30},
		k(3): {BytesIn: 400, DiskBytes: 400},
		k(5): {BytesIn: 1000, BytesOut: 1000, DiskBytes: 1000},
		k(6): {BytesIn: 60},
	}
	for key, w := range want {
		if got, ok := loads[key]; !ok || got != w {
			t.Errorf("partition %d: %+v (%v), want %+v", key.Index, got, ok, w)
		}
	}
	if len(loads) != len(want) {
		t.Errorf("loads %v: want only partitions 0, 1, 2, 3, 5 and 6", loads)
	}
	if _, ok := next[k(7)]; ok {
		t.Error("an expired memory is kept")
	}
	if m := next[k(1)]; m.load.BytesIn != 200 {
		t.Errorf("memory of partition 1: %+v, want the settled leader's", m)
	}
	// Without memory, partition 2 takes its unsettled leader's report.
	loads, _ = mergeLoads(reports, nil, t0)
	if got := loads[k(2)]; got.BytesIn != 300 {
		t.Errorf("partition 2 without memory: %+v, want the unsettled leader's", got)
	}
}

// TestLoadChanged: a report is rewritten when a replica comes, goes or
// changes role, or a rate moves by more than 10% and 16 KiB/s.
func TestLoadChanged(t *testing.T) {
	topic := [16]byte{2, 15: 2}
	base := metadata.AgentLoad{Partitions: []metadata.PartitionLoad{
		{TopicID: topic, Partition: 0, Leader: true, BytesIn: 1 << 20, BytesOut: 2 << 20, LocalBytes: 1 << 30},
		{TopicID: topic, Partition: 1, BytesIn: 1 << 10},
	}}
	change := func(fn func(*metadata.AgentLoad)) metadata.AgentLoad {
		l := base
		l.Partitions = slices.Clone(base.Partitions)
		fn(&l)
		return l
	}
	for _, tc := range []struct {
		name string
		next metadata.AgentLoad
		want bool
	}{
		{"same", change(func(*metadata.AgentLoad) {}), false},
		{"in 5% up", change(func(l *metadata.AgentLoad) { l.Partitions[0].BytesIn *= 1.05 }), false},
		{"in 20% up", change(func(l *metadata.AgentLoad) { l.Partitions[0].BytesIn *= 1.2 }), true},
		{"small rate tripled", change(func(l *metadata.AgentLoad) { l.Partitions[1].BytesIn *= 3 }), false},
		{"out halved", change(func(l *metadata.AgentLoad) { l.Partitions[0].BytesOut /= 2 }), true},
		{"disk 20% up", change(func(l *metadata.AgentLoad) { l.Partitions[0].LocalBytes += 200 << 20 }), true},
		{"role", change(func(l *metadata.AgentLoad) { l.Partitions[1].Leader = true }), true},
		{"replica gone", change(func(l *metadata.AgentLoad) { l.Partitions = l.Partitions[:1] }), true},
		{"replica swapped", change(func(l *metadata.AgentLoad) { l.Partitions[1].Partition = 7 }), true},
	} {
		if got := loadChanged(base, tc.next); got != tc.want {
			t.Errorf("%s: changed %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWithLoads: a partition no report lists weighs its topic's mean.
func TestWithLoads(t *testing.T) {
	a, b := [16]byte{1, 15: 1}, [16]byte{2, 15: 2}
	refs := []stateRef{{topicID: a, index: 0}, {topicID: a, index: 1}, {topicID: a, index: 2}, {topicID: b, index: 0}}
	parts := make([]placement.Partition, len(refs))
	withLoads(parts, refs, map[Key]placement.Load{{a, 0}: {BytesIn: 100, DiskBytes: 10}, {a, 2}: {BytesIn: 300, BytesOut: 40, DiskBytes: 30}})
	want := []placement.Load{{BytesIn: 100, DiskBytes: 10}, {BytesIn: 200, BytesOut: 20, DiskBytes: 20}, {BytesIn: 300, BytesOut: 40, DiskBytes: 30}, {}}
	for i, w := range want {
		if parts[i].Load != w {
			t.Errorf("partition %d: %+v, want %+v", i, parts[i].Load, w)
		}
	}
}

// TestReorderState: a new order of the same replicas is written with its
// first replica leading in a new epoch when that one is live and in sync
// (and the balancer hands leadership over); anything else writes nothing.
func TestReorderState(t *testing.T) {
	st := metadata.PartitionState{Leader: 1, LeaderEpoch: 4, StateEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}
	for _, tc := range []struct {
		name       string
		target     []int32
		live       []int32
		lead       bool
		wantLeader int32
		wantWrite  bool
	}{
		{"to an in-sync replica", []int32{2, 1, 3}, []int32{1, 2, 3}, true, 2, true},
		{"order only, leadership left alone", []int32{2, 1, 3}, []int32{1, 2, 3}, false, 1, true},
		{"to a replica out of sync", []int32{3, 1, 2}, []int32{1, 2, 3}, true, 1, true},
		{"to a replica not live", []int32{2, 1, 3}, []int32{1, 3}, true, 1, true},
		{"the same order", []int32{1, 2, 3}, []int32{1, 2, 3}, true, 1, false},
		{"other replicas", []int32{2, 1, 4}, []int32{1, 2, 4}, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := reorderState(st, tc.target, tc.live, tc.lead)
			if wrote := next.StateEpoch != st.StateEpoch; wrote != tc.wantWrite {
				t.Fatalf("wrote %v, want %v: %+v", wrote, tc.wantWrite, next)
			}
			if !tc.wantWrite {
				return
			}
			epoch := st.LeaderEpoch
			if tc.wantLeader != st.Leader {
				epoch++
			}
			if !slices.Equal(next.Replicas, tc.target) || next.Leader != tc.wantLeader || next.LeaderEpoch != epoch || next.StateEpoch != 8 {
				t.Fatalf("next %+v: want replicas %v led by %d in epoch %d", next, tc.target, tc.wantLeader, epoch)
			}
		})
	}
	moving, err := st.Reassign([]int32{1, 2, 4}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if next := reorderState(moving, []int32{2, 1, 3}, []int32{1, 2, 3, 4}, true); next.StateEpoch != moving.StateEpoch {
		t.Fatalf("a moving partition was reordered: %+v", next)
	}
}

// TestBalanceOnceByLoadLeadershipFirst: three agents hold eight
// partitions of two replicas, evenly by count, but agent 0 leads the one
// partition with five times the others' rate and carries twice what
// agent 2 does, as their load reports in the store say. The balancer
// evens the load by handing preferred leaderships to followers, written
// at once with the new leader: no partition is moved, none copied.
func TestBalanceOnceByLoadLeadershipFirst(t *testing.T) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := metadata.New(objstore.NewMem(), logger)
	if _, err := store.InitCluster(ctx); err != nil {
		t.Fatal(err)
	}
	var assignment [][]int32
	for p := range int32(8) {
		assignment = append(assignment, []int32{p % 3, (p + 1) % 3})
	}
	top, err := store.CreateTopic(ctx, "t", 8, assignment, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := &fakeHost{live: []int32{0, 1, 2}}
	host.topic = &dataplane.Topic{Name: "t", ID: top.ID, PartitionCount: 8, ReplicationFactor: 2}
	t0 := time.Unix(1_000_000, 0)
	reports := map[int32]*metadata.AgentLoad{}
	for i := range int32(8) {
		st, _, err := store.PartitionState(ctx, top.ID, i)
		if err != nil {
			t.Fatal(err)
		}
		p := partition.NewPeer(i, st)
		host.peers = append(host.peers, p)
		host.topic.Partitions = append(host.topic.Partitions, p)
		in := float64(100 << 10)
		if i == 0 {
			in *= 5
		}
		for _, r := range st.Replicas {
			if reports[r] == nil {
				reports[r] = &metadata.AgentLoad{AgentID: r, WrittenAt: t0}
			}
			reports[r].Partitions = append(reports[r].Partitions, metadata.PartitionLoad{TopicID: top.ID, Partition: i,
				Leader: r == st.Leader, RoleAge: time.Hour, BytesIn: in, BytesOut: 100 << 10, LocalBytes: 1 << 20})
		}
	}
	for _, r := range reports {
		if err := store.PutAgentLoad(ctx, *r); err != nil {
			t.Fatal(err)
		}
	}
	members := &fakeMembers{self: membership.Member{ID: 9, State: membership.StateJoining},
		others: []membership.Member{{ID: 0, State: membership.StateActive}, {ID: 1, State: membership.StateActive}, {ID: 2, State: membership.StateActive}}}
	cfg := Config{AutoRebalance: true, AutoLeaderRebalance: true, RebalanceSettle: time.Second, RebalanceMaxMoves: 8, RebalanceMaxMovesPerAgent: 8,
		ReplicaLagTimeMax: time.Second, ReconcileInterval: time.Second,
		RebalanceByLoad: true, LoadBalance: placement.DefaultBalance(), LoadReportInterval: 30 * time.Second}
	c := New(9, cfg, store, host, nil, prometheus.NewRegistry(), logger, t0)
	c.SetMembers(members)

	c.BalanceOnce(ctx, t0.Add(2*time.Second))
	before, after := map[int32]float64{}, map[int32]float64{}
	for i, st := range states(t, store, host) {
		if st.Moving() {
			t.Errorf("partition %d moves: %+v", i, st)
		}
		if !sameReplicas(st.Replicas, assignment[i]) {
			t.Errorf("partition %d: replicas %v, were %v", i, st.Replicas, assignment[i])
		}
		if st.Leader != st.Replicas[0] {
			t.Errorf("partition %d: led by %d, not by its first replica in %v", i, st.Leader, st.Replicas)
		}
		in := float64(100 << 10)
		if i == 0 {
			in *= 5
		}
		leader, follower := 2*in+100<<10, in
		before[assignment[i][0]] += leader
		before[assignment[i][1]] += follower
		after[st.Replicas[0]] += leader
		after[st.Replicas[1]] += follower
	}
	t.Logf("network per agent before %v, after %v", before, after)
	if n := testutil.ToFloat64(c.metrics.leadershipMoves); n == 0 {
		t.Error("no preferred leader changed")
	}
	if n := testutil.ToFloat64(c.metrics.movesStarted); n != 0 {
		t.Errorf("%v moves started", n)
	}
	lo, hi := after[0], after[0]
	for _, v := range after {
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi/lo > 1.25 {
		t.Errorf("network per agent after %v: max/min %.2f", after, hi/lo)
	}
	// The next round finds nothing to do.
	c.BalanceOnce(ctx, t0.Add(3*time.Second))
	if n := testutil.ToFloat64(c.metrics.movesStarted); n != 0 {
		t.Errorf("the next round started %v moves", n)
	}
}
