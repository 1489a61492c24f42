package placement

import (
	"fmt"
	"slices"
	"testing"
)

func agentsOf(ids ...int32) []Agent {
	var out []Agent
	for _, id := range ids {
		out = append(out, Agent{ID: id})
	}
	return out
}

// roundRobin is how topics are created: replica r of partition p on
// agents[(p+r) mod n].
func roundRobin(topic string, partitions, rf int, agents []int32) []Partition {
	var out []Partition
	for p := range partitions {
		var replicas []int32
		for r := range rf {
			replicas = append(replicas, agents[(p+r)%len(agents)])
		}
		out = append(out, Partition{Topic: topic, Index: int32(p), Replicas: replicas})
	}
	return out
}

// counts returns replicas and leaders per agent.
func counts(targets [][]int32) (replicas, leaders map[int32]int) {
	replicas, leaders = map[int32]int{}, map[int32]int{}
	for _, t := range targets {
		for i, r := range t {
			replicas[r]++
			if i == 0 {
				leaders[r]++
			}
		}
	}
	return replicas, leaders
}

// moves counts replicas that are in the target but were not before.
func moves(parts []Partition, targets [][]int32) int {
	n := 0
	for i, p := range parts {
		for _, r := range targets[i] {
			if !slices.Contains(p.Replicas, r) {
				n++
			}
		}
	}
	return n
}

func checkEven(t *testing.T, what string, agents []int32, m map[int32]int) {
	t.Helper()
	lo, hi := m[agents[0]], m[agents[0]]
	for _, a := range agents {
		lo, hi = min(lo, m[a]), max(hi, m[a])
	}
	if hi-lo > 1 {
		t.Errorf("%s per agent %v: spread %d..%d", what, m, lo, hi)
	}
}

// TestPlaceJoin: a fourth agent joins three that hold 12 partitions of two
// replicas: it gets its fair share of replicas (6) and leaders (3), and
// only those 6 replicas move.
func TestPlaceJoin(t *testing.T) {
	parts := roundRobin("t", 12, 2, []int32{0, 1, 2})
	targets := Place(agentsOf(0, 1, 2, 3), parts)
	reps, leaders := counts(targets)
	checkEven(t, "replicas", []int32{0, 1, 2, 3}, reps)
	checkEven(t, "leaders", []int32{0, 1, 2, 3}, leaders)
	if reps[3] != 6 {
		t.Errorf("the new agent holds %d replicas, want 6", reps[3])
	}
	if n := moves(parts, targets); n != 6 {
		t.Errorf("%d replicas move, want the 6 the new agent takes", n)
	}
	for i, tg := range targets {
		if len(tg) != 2 || tg[0] == tg[1] {
			t.Errorf("partition %d: target %v", i, tg)
		}
	}
	if again := Place(agentsOf(0, 1, 2, 3), parts); fmt.Sprint(again) != fmt.Sprint(targets) {
		t.Errorf("not deterministic: %v then %v", targets, again)
	}
	// Balanced input stays as it is.
	var placed []Partition
	for i, tg := range targets {
		placed = append(placed, Partition{Topic: "t", Index: int32(i), Replicas: tg})
	}
	if n := moves(placed, Place(agentsOf(0, 1, 2, 3), placed)); n != 0 {
		t.Errorf("a balanced placement moves %d replicas", n)
	}
}

// TestPlaceLeave: agent 3 drains (it is no longer active): its replicas
// go to the others, evenly, and nothing else moves.
func TestPlaceLeave(t *testing.T) {
	parts := roundRobin("t", 12, 2, []int32{0, 1, 2, 3})
	targets := Place(agentsOf(0, 1, 2), parts)
	reps, leaders := counts(targets)
	if reps[3] != 0 {
		t.Fatalf("the draining agent keeps %d replicas", reps[3])
	}
	checkEven(t, "replicas", []int32{0, 1, 2}, reps)
	checkEven(t, "leaders", []int32{0, 1, 2}, leaders)
	if n := moves(parts, targets); n != 6 {
		t.Errorf("%d replicas move, want the draining agent's 6", n)
	}
}

// TestPlaceRestoresReplicationFactor: three replicas each on three
// agents, one drains: the partitions keep the two agents left. When an
// agent comes back, each grows back to its replication factor of three,
// adding a replica and moving none.
func TestPlaceRestoresReplicationFactor(t *testing.T) {
	parts := roundRobin("t", 6, 3, []int32{0, 1, 2})
	for i := range parts {
		parts[i].ReplicationFactor = 3
	}
	shrunk := Place(agentsOf(0, 1), parts)
	for i, tg := range shrunk {
		if len(tg) != 2 || slices.Contains(tg, 2) {
			t.Fatalf("partition %d on two agents: %v", i, tg)
		}
		parts[i].Replicas = tg
	}
	grown := Place(agentsOf(0, 1, 3), parts)
	for i, tg := range grown {
		if len(tg) != 3 || !slices.Contains(tg, 3) {
			t.Errorf("partition %d back on three agents: %v", i, tg)
		}
		for _, r := range parts[i].Replicas {
			if !slices.Contains(tg, r) {
				t.Errorf("partition %d: replica %d moved (%v -> %v)", i, r, parts[i].Replicas, tg)
			}
		}
	}
	// Without a factor, the count found is kept.
	for i := range parts {
		parts[i].ReplicationFactor = 0
	}
	for i, tg := range Place(agentsOf(0, 1, 3), parts) {
		if len(tg) != 2 {
			t.Errorf("partition %d with no factor given: %v", i, tg)
		}
	}
}

// TestPlaceRacks: with three racks and three replicas, every partition
// spans all three racks, also after a join into one rack, and the join
// takes its share of that rack's replicas.
func TestPlaceRacks(t *testing.T) {
	agents := []Agent{{0, "a"}, {1, "b"}, {2, "c"}, {3, "a"}, {4, "b"}, {5, "c"}}
	parts := roundRobin("t", 10, 3, []int32{0, 1, 2, 3, 4, 5})
	agents = append(agents, Agent{6, "a"})
	targets := Place(agents, parts)
	rack := map[int32]string{}
	for _, a := range agents {
		rack[a.ID] = a.Rack
	}
	for i, tg := range targets {
		seen := map[string]bool{}
		for _, r := range tg {
			seen[rack[r]] = true
		}
		if len(seen) != 3 {
			t.Errorf("partition %d: %v spans racks %v", i, tg, seen)
		}
	}
	// Each rack holds a third of the replicas (every partition spans the
	// three), so counts are even within a rack: rack a has three agents,
	// the others two.
	reps, _ := counts(targets)
	checkEven(t, "replicas in rack a", []int32{0, 3, 6}, reps)
	checkEven(t, "replicas in rack b", []int32{1, 4}, reps)
	checkEven(t, "replicas in rack c", []int32{2, 5}, reps)
}

// TestPlaceUnevenTopicsAndFixed: topics of different sizes and factors
// balance together; a fixed partition is never changed; a replication
// factor above the agent count shrinks to it.
func TestPlaceUnevenTopicsAndFixed(t *testing.T) {
	parts := append(roundRobin("big", 9, 3, []int32{0, 1, 2}), roundRobin("small", 2, 1, []int32{0})...)
	parts = append(parts, Partition{Topic: "fixed", Replicas: []int32{0, 9}, Fixed: true})
	targets := Place(agentsOf(0, 1, 2, 3, 4), parts)
	if !slices.Equal(targets[len(targets)-1], []int32{0, 9}) {
		t.Errorf("fixed partition changed to %v", targets[len(targets)-1])
	}
	reps, leaders := counts(targets[:len(targets)-1])
	reps[0]++ // the fixed partition's replica counts towards agent 0
	checkEven(t, "replicas", []int32{0, 1, 2, 3, 4}, reps)
	checkEven(t, "leaders", []int32{0, 1, 2, 3, 4}, leaders)
	one := Place(agentsOf(7), []Partition{{Topic: "x", Replicas: []int32{1, 2, 3}}})
	if !slices.Equal(one[0], []int32{7}) {
		t.Errorf("three replicas onto one agent: %v, want [7]", one[0])
	}
}

// TestPlaceReplacesOnlyWhatIsGone: when an agent is gone, only its
// replicas are placed anew; every surviving replica stays, though the
// greedy fill alone would leave the counts uneven and balancing could
// move one that holds data.
func TestPlaceReplacesOnlyWhatIsGone(t *testing.T) {
	agents := []Agent{{ID: 0}, {ID: 1}, {ID: 2}}
	parts := []Partition{
		{Topic: "t", Index: 0, Replicas: []int32{0, 5}, ReplicationFactor: 2},
		{Topic: "t", Index: 1, Replicas: []int32{1, 5}, ReplicationFactor: 2},
		{Topic: "t", Index: 2, Replicas: []int32{5, 2}, ReplicationFactor: 2},
	}
	got := Place(agents, parts)
	load := map[int32]int{}
	for i, target := range got {
		for _, r := range parts[i].Replicas {
			if r != 5 && !slices.Contains(target, r) {
				t.Errorf("partition %d: %v -> %v moves the surviving replica on agent %d", i, parts[i].Replicas, target, r)
			}
		}
		for _, r := range target {
			load[r]++
		}
	}
	if load[0] != 2 || load[1] != 2 || load[2] != 2 {
		t.Errorf("targets %v: replicas per agent %v, want 2 each", got, load)
	}
}
