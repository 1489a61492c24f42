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
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestMovesToCancel: rounds on logical time (grace 30 s) over four
// partitions: 0 adds a replica on agent 3, 1 on live agent 1, 2 is not
// moving, 3 adds replicas on agents 3 and 4. A move is cancelled once an
// agent it adds a replica on has been absent for the grace, counted from
// the first round that saw it absent; an agent that comes back within the
// grace is forgotten, and its absence counts afresh if it leaves again. A
// move onto an agent that drains is cancelled at once.
func TestMovesToCancel(t *testing.T) {
	states := []metadata.PartitionState{
		{Leader: 0, Replicas: []int32{0, 1, 3}, ISR: []int32{0, 1}, Target: []int32{0, 3}, Adding: []int32{3}},
		{Leader: 0, Replicas: []int32{0, 2, 1}, ISR: []int32{0, 2}, Target: []int32{0, 1}, Adding: []int32{1}},
		{Leader: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}},
		{Leader: 2, Replicas: []int32{2, 3, 4}, ISR: []int32{2}, Target: []int32{2, 3, 4}, Adding: []int32{3, 4}},
	}
	t0 := time.Unix(1_000_000, 0)
	const grace = 30 * time.Second
	absent := map[int32]time.Time{}
	for _, step := range []struct {
		name       string
		at         time.Duration
		present    map[int32]bool
		draining   map[int32]bool
		wantCancel []goneMove
		wantAbsent map[int32]time.Duration // since t0
	}{
		{"3 and 4 first seen absent", 0, live(0, 1, 2), nil, nil, map[int32]time.Duration{3: 0, 4: 0}},
		{"within the grace", 29 * time.Second, live(0, 1, 2), nil, nil, map[int32]time.Duration{3: 0, 4: 0}},
		{"4 comes back", 29500 * time.Millisecond, live(0, 1, 2, 4), nil, nil, map[int32]time.Duration{3: 0}},
		{"3 absent for the grace: both its moves", 30 * time.Second, live(0, 1, 2, 4), nil,
			[]goneMove{{0, 3, grace, false}, {3, 3, grace, false}}, map[int32]time.Duration{3: 0}},
		{"4 leaves again: counted afresh", 40 * time.Second, live(0, 1, 2, 3), nil,
			nil, map[int32]time.Duration{4: 40 * time.Second}},
		{"4 absent for the grace", 70 * time.Second, live(0, 1, 2, 3), nil,
			[]goneMove{{3, 4, grace, false}}, map[int32]time.Duration{4: 40 * time.Second}},
		{"a move waiting on two agents: the one absent long enough cancels it", 80 * time.Second, live(0, 1, 2), nil,
			[]goneMove{{3, 4, 40 * time.Second, false}}, map[int32]time.Duration{3: 80 * time.Second, 4: 40 * time.Second}},
		{"every agent back, none draining", 200 * time.Second, live(0, 1, 2, 3, 4), nil,
			nil, map[int32]time.Duration{}},
		{"a move onto a draining agent is cancelled at once", 210 * time.Second, live(0, 1, 2, 3, 4), live(4),
			[]goneMove{{Index: 3, Agent: 4, Draining: true}}, map[int32]time.Duration{}},
	} {
		now := t0.Add(step.at)
		cancel, next := movesToCancel(states, step.present, step.draining, absent, now, grace)
		if !slices.Equal(cancel, step.wantCancel) {
			t.Fatalf("%s (t0+%v): cancel %+v, want %+v", step.name, step.at, cancel, step.wantCancel)
		}
		if len(next) != len(step.wantAbsent) {
			t.Fatalf("%s (t0+%v): absences %v, want %v", step.name, step.at, next, step.wantAbsent)
		}
		for id, since := range step.wantAbsent {
			if !next[id].Equal(t0.Add(since)) {
				t.Fatalf("%s (t0+%v): agent %d absent since %v, want t0+%v", step.name, step.at, id, next[id].Sub(t0), since)
			}
		}
		absent = next
	}
}

// TestBalanceOnceCancelsMovesToGoneAgents: a move onto agent 5, which
// gossip does not list, is cancelled by the balancer's round --rebalance-
// settle after the round that first saw 5 absent, and not before; the
// partition is back on its original replica and ISR, and the cancel is
// counted. It holds with another agent alive (the lease holder cancels)
// and with this agent alone (it takes no lease but still cancels: the
// agent that left was its only peer). Rounds run on logical time.
func TestBalanceOnceCancelsMovesToGoneAgents(t *testing.T) {
	for _, tc := range []struct {
		name   string
		others []membership.Member
	}{
		{"with a peer", []membership.Member{{ID: 1, State: membership.StateActive}}},
		{"alone", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, store, topID, t0 := moveToGoneAgent(t, tc.others)
			for _, step := range []struct {
				at         time.Duration
				wantMoving int
			}{
				{5 * time.Second, 1},  // first seen absent
				{34 * time.Second, 1}, // absent for 29 s
				{35 * time.Second, 0}, // for 30 s: cancelled
				{60 * time.Second, 0},
			} {
				c.BalanceOnce(context.Background(), t0.Add(step.at))
				if got := moving(t, store, topID, 2); got != step.wantMoving {
					t.Fatalf("after a round at t0+%v: %d partitions moving, want %d", step.at, got, step.wantMoving)
				}
			}
			st, _, err := store.PartitionState(context.Background(), topID, 0)
			if err != nil {
				t.Fatal(err)
			}
			if st.Moving() || !slices.Equal(st.Replicas, []int32{0}) || !slices.Equal(st.ISR, []int32{0}) || st.Leader != 0 {
				t.Fatalf("partition 0 after the cancel: %+v, want replicas and ISR [0], led by 0", st)
			}
			if got := testutil.ToFloat64(c.metrics.movesCancelled); got != 1 {
				t.Fatalf("strata_reassignments_cancelled_total = %v, want 1", got)
			}
		})
	}
}

// moveToGoneAgent is a controller of agent 0 whose gossip lists others,
// over topic "t" of two partitions on agent 0; partition 0 is moving onto
// agent 5, which gossip does not list.
func moveToGoneAgent(t *testing.T, others []membership.Member) (*Controller, *metadata.Store, [16]byte, time.Time) {
	t.Helper()
	ctx := context.Background()
	store := metadata.New(objstore.NewMem(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := store.InitCluster(ctx); err != nil {
		t.Fatal(err)
	}
	top, err := store.CreateTopic(ctx, "t", 2, [][]int32{{0}, {0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := &fakeHost{live: []int32{0}}
	host.topic = &dataplane.Topic{Name: "t", ID: top.ID, PartitionCount: 2, ReplicationFactor: 1}
	for i := range int32(2) {
		st, etag, err := store.PartitionState(ctx, top.ID, i)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 { // partition 0 moves onto agent 5, which then left
			if st, err = st.Reassign([]int32{5}, 5); err != nil {
				t.Fatal(err)
			}
			if _, err := store.CASPartitionState(ctx, top.ID, i, st, etag); err != nil {
				t.Fatal(err)
			}
		}
		p := partition.NewPeer(i, st)
		host.peers = append(host.peers, p)
		host.topic.Partitions = append(host.topic.Partitions, p)
	}
	members := &fakeMembers{self: membership.Member{ID: 0, State: membership.StateActive}, others: others}
	t0 := time.Unix(1_000_000, 0)
	cfg := Config{AutoRebalance: true, RebalanceSettle: 30 * time.Second, RebalanceMaxMoves: 4, RebalanceMaxMovesPerAgent: 2,
		ReplicaLagTimeMax: time.Second, ReconcileInterval: time.Second}
	c := New(0, cfg, store, host, nil, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), t0)
	c.SetMembers(members)
	return c, store, top.ID, t0
}

// TestAbsenceCountsAfreshInANewLeaseTerm: an agent that loses the
// balancer lease forgets the absences it saw; when it holds the lease
// again, the grace counts from its first round in the new term (the gone
// agent may have come back and left in between).
func TestAbsenceCountsAfreshInANewLeaseTerm(t *testing.T) {
	c, store, topID, t0 := moveToGoneAgent(t, []membership.Member{{ID: 1, State: membership.StateActive}})
	ctx := context.Background()
	c.BalanceOnce(ctx, t0.Add(5*time.Second)) // takes the lease; 5 first seen absent
	// Agent 1 holds the lease from t0+16 s (agent 0's lapses at t0+15 s)
	// to t0+26 s.
	if _, held, err := store.AcquireLease(ctx, balancerLease, 1, t0.Add(16*time.Second), LeaseTerm); err != nil || !held {
		t.Fatalf("agent 1 takes the lease: held %v, %v", held, err)
	}
	c.BalanceOnce(ctx, t0.Add(20*time.Second)) // not held: forgets
	for _, step := range []struct {
		at         time.Duration
		wantMoving int
	}{
		{27 * time.Second, 1}, // held again; 5 first seen absent in this term
		{40 * time.Second, 1}, // 35 s since t0+5 s, but 13 s in this term
		{57 * time.Second, 0}, // 30 s in this term
	} {
		c.BalanceOnce(ctx, t0.Add(step.at))
		if got := moving(t, store, topID, 2); got != step.wantMoving {
			t.Fatalf("after a round at t0+%v: %d partitions moving, want %d", step.at, got, step.wantMoving)
		}
	}
}
