package control

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// fakeHost serves one topic whose partitions are all peers: the
// controller under test holds no replica.
type fakeHost struct {
	mu    sync.Mutex
	topic *dataplane.Topic
	peers []*partition.Peer
	live  []int32
}

func (h *fakeHost) Partitions() []*partition.Partition { return nil }
func (h *fakeHost) Topics() []*dataplane.Topic         { return []*dataplane.Topic{h.topic} }
func (h *fakeHost) Topic(name string) (*dataplane.Topic, bool) {
	return h.topic, name == h.topic.Name
}
func (h *fakeHost) PlacementAgents() []int32 { return h.live }
func (h *fakeHost) Lookup(k Key) (*partition.Partition, *partition.Peer) {
	if k.TopicID != h.topic.ID || k.Index < 0 || int(k.Index) >= len(h.peers) {
		return nil, nil
	}
	return nil, h.peers[k.Index]
}
func (h *fakeHost) MoveReplica(Key, metadata.PartitionState, string) {}
func (h *fakeHost) LeaderMovedAway(*partition.Partition)             {}
func (h *fakeHost) UploadTiered(context.Context)                     {}
func (h *fakeHost) StopAgent()                                       {}

// fakeMembers is a gossip view that changes only when the test says.
type fakeMembers struct {
	self   membership.Member
	others []membership.Member
}

func (m *fakeMembers) Self() membership.Member                          { return m.self }
func (m *fakeMembers) Members() []membership.Member                     { return m.others }
func (m *fakeMembers) Broadcast(string, []byte) error                   { return nil }
func (m *fakeMembers) SetState(context.Context, membership.State) error { return nil }

// moving counts the partitions whose stored state is being reassigned.
func moving(t *testing.T, store *metadata.Store, id [16]byte, n int32) int {
	t.Helper()
	count := 0
	for i := range n {
		st, _, err := store.PartitionState(context.Background(), id, i)
		if err != nil {
			t.Fatal(err)
		}
		if st.Moving() {
			count++
		}
	}
	return count
}

// TestBalanceOnceOnLogicalTime: the balancer plans nothing until
// membership has been unchanged for --rebalance-settle, then starts moves
// towards an even placement, never more than --rebalance-max-moves at
// once. Every round is driven with an explicit now; no clock is read.
func TestBalanceOnceOnLogicalTime(t *testing.T) {
	ctx := context.Background()
	store := metadata.New(objstore.NewMem(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := store.InitCluster(ctx); err != nil {
		t.Fatal(err)
	}
	const parts = 4
	top, err := store.CreateTopic(ctx, "t", parts, [][]int32{{0}, {0}, {0}, {0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := &fakeHost{live: []int32{0, 1, 9}}
	host.topic = &dataplane.Topic{Name: "t", ID: top.ID, PartitionCount: parts, ReplicationFactor: 1}
	for i := range int32(parts) {
		st, _, err := store.PartitionState(ctx, top.ID, i)
		if err != nil {
			t.Fatal(err)
		}
		p := partition.NewPeer(i, st)
		host.peers = append(host.peers, p)
		host.topic.Partitions = append(host.topic.Partitions, p)
	}
	// This agent (9) is joining, so it takes no replicas; 0 holds all of
	// them and 1 has just joined.
	members := &fakeMembers{self: membership.Member{ID: 9, State: membership.StateJoining},
		others: []membership.Member{{ID: 0, State: membership.StateActive}, {ID: 1, State: membership.StateActive}}}
	t0 := time.Unix(1_000_000, 0)
	cfg := Config{AutoRebalance: true, RebalanceSettle: 30 * time.Second, RebalanceMaxMoves: 1, RebalanceMaxMovesPerAgent: 10,
		ReplicaLagTimeMax: time.Second, ReconcileInterval: time.Second}
	c := New(9, cfg, store, host, nil, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), t0)
	c.SetMembers(members)

	for _, step := range []struct {
		at         time.Duration
		wantMoving int
	}{
		{10 * time.Second, 0}, // membership changed 10 s ago: not settled
		{29 * time.Second, 0},
		{31 * time.Second, 1}, // settled: one move, the most in flight
		{40 * time.Second, 1}, // still in flight: no second one
	} {
		c.BalanceOnce(ctx, t0.Add(step.at))
		if got := moving(t, store, top.ID, parts); got != step.wantMoving {
			t.Fatalf("after a round at t0+%v: %d partitions moving, want %d", step.at, got, step.wantMoving)
		}
	}
	// Cancel the move (as an operator may), then change membership: the
	// settling period starts again.
	for i := range int32(parts) {
		if host.peers[i].State().Moving() {
			if err := c.Reassign(ctx, "t", i, nil, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.MemberChanged(t0.Add(50 * time.Second))
	c.BalanceOnce(ctx, t0.Add(60*time.Second))
	if got := moving(t, store, top.ID, parts); got != 0 {
		t.Fatalf("a round 10 s after a membership change started %d moves", got)
	}
	c.BalanceOnce(ctx, t0.Add(81*time.Second))
	if got := moving(t, store, top.ID, parts); got != 1 {
		t.Fatalf("a round 31 s after a membership change: %d moving, want 1", got)
	}
	for i := range int32(parts) {
		st := host.peers[i].State()
		if !slices.Contains(st.Replicas, 0) {
			t.Fatalf("partition %d: replicas %v lost agent 0 before the move completed", i, st.Replicas)
		}
	}
}

// TestShrinkState: a target that only drops replicas and keeps in-sync
// ones is written in one step, its removed leader handing over to the
// first target replica in a new epoch and the factor kept; anything that
// would need a copy, or a partition already moving, is not.
func TestShrinkState(t *testing.T) {
	st := metadata.PartitionState{Leader: 3, LeaderEpoch: 4, StateEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}
	for _, tc := range []struct {
		name       string
		st         metadata.PartitionState
		target     []int32
		ok         bool
		wantLeader int32
	}{
		{"the leader dropped", st, []int32{2, 1}, true, 2},
		{"a follower dropped", metadata.PartitionState{Leader: 1, LeaderEpoch: 4, StateEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, []int32{1, 2}, true, 1},
		{"to one replica", st, []int32{1}, true, 1},
		{"keeps a replica out of sync", metadata.PartitionState{Leader: 3, LeaderEpoch: 4, StateEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}}, []int32{1, 2}, false, 3},
		{"adds a replica", st, []int32{1, 4}, false, 3},
		{"the same size", st, []int32{1, 2, 4}, false, 3},
		{"empty", st, nil, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, ok := shrinkState(tc.st, tc.target)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v: %+v", ok, tc.ok, next)
			}
			if !ok {
				if next.StateEpoch != tc.st.StateEpoch {
					t.Fatalf("not shrinkable, yet changed: %+v", next)
				}
				return
			}
			epoch := tc.st.LeaderEpoch
			if tc.wantLeader != tc.st.Leader {
				epoch++
			}
			if !slices.Equal(next.Replicas, tc.target) || !slices.Equal(next.ISR, tc.target) && len(next.ISR) != len(tc.target) ||
				next.Leader != tc.wantLeader || next.LeaderEpoch != epoch || next.StateEpoch != tc.st.StateEpoch+1 ||
				next.Moving() || next.ReplicationFactor != 3 {
				t.Fatalf("next %+v: want replicas %v led by %d in leader epoch %d, state epoch %d, factor 3, not moving",
					next, tc.target, tc.wantLeader, epoch, tc.st.StateEpoch+1)
			}
			if err := next.Validate(5); err != nil {
				t.Fatal(err)
			}
		})
	}
	moving, err := st.Reassign([]int32{1, 2, 4}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := shrinkState(moving, []int32{1, 2}); ok {
		t.Fatal("a moving partition was shrunk")
	}
}

// TestBalanceOnceDrainDropsReplicasAtOnce: three agents hold 40
// partitions of three replicas, all in sync, and agent 2 drains. With
// nowhere to put its replicas, one balancer round drops them from every
// partition, though --rebalance-max-moves is 1: dropping a replica copies
// nothing, and a drain of thousands of partitions must not wait for move
// slots. Each partition keeps its factor of 3, to grow back when agents
// are there.
func TestBalanceOnceDrainDropsReplicasAtOnce(t *testing.T) {
	ctx := context.Background()
	store := metadata.New(objstore.NewMem(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := store.InitCluster(ctx); err != nil {
		t.Fatal(err)
	}
	const parts = 40
	var assignment [][]int32
	for p := range int32(parts) {
		assignment = append(assignment, []int32{p % 3, (p + 1) % 3, (p + 2) % 3})
	}
	top, err := store.CreateTopic(ctx, "t", parts, assignment, nil)
	if err != nil {
		t.Fatal(err)
	}
	host := &fakeHost{live: []int32{0, 1, 2, 9}}
	host.topic = &dataplane.Topic{Name: "t", ID: top.ID, PartitionCount: parts, ReplicationFactor: 3}
	for i := range int32(parts) {
		st, _, err := store.PartitionState(ctx, top.ID, i)
		if err != nil {
			t.Fatal(err)
		}
		p := partition.NewPeer(i, st)
		host.peers = append(host.peers, p)
		host.topic.Partitions = append(host.topic.Partitions, p)
	}
	// This agent (9) runs the balancer and holds nothing; it is joining,
	// so placement gives it nothing either.
	members := &fakeMembers{self: membership.Member{ID: 9, State: membership.StateJoining},
		others: []membership.Member{{ID: 0, State: membership.StateActive}, {ID: 1, State: membership.StateActive}, {ID: 2, State: membership.StateDraining}}}
	t0 := time.Unix(1_000_000, 0)
	cfg := Config{AutoRebalance: true, RebalanceSettle: 30 * time.Second, RebalanceMaxMoves: 1, RebalanceMaxMovesPerAgent: 1,
		ReplicaLagTimeMax: time.Second, ReconcileInterval: time.Second}
	c := New(9, cfg, store, host, nil, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), t0)
	c.SetMembers(members)
	c.BalanceOnce(ctx, t0.Add(time.Second)) // a drain does not wait for membership to settle
	for i := range int32(parts) {
		st, _, err := store.PartitionState(ctx, top.ID, i)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(st.Replicas, 2) || len(st.Replicas) != 2 || st.Moving() || st.WantedReplicas() != 3 || !slices.Contains(st.ISR, st.Leader) {
			t.Fatalf("partition %d after one round: %+v; want two replicas, none on the draining agent 2, not moving, factor 3", i, st)
		}
	}
}
