package placement

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// withLoad gives every partition load l, and partition hot (if >= 0) its
// BytesIn times factor.
func withLoad(parts []Partition, l Load, hot int, factor float64) []Partition {
	out := slices.Clone(parts)
	for i := range out {
		out[i].Load = l
		if i == hot {
			out[i].Load.BytesIn *= factor
		}
	}
	return out
}

// network is each agent's bytes per second under targets, as PlaceByLoad
// counts them: a leader carries BytesIn once per replica plus BytesOut, a
// follower BytesIn.
func network(agents []int32, parts []Partition, targets [][]int32) map[int32]float64 {
	m := map[int32]float64{}
	for _, a := range agents {
		m[a] = 0
	}
	for i, t := range targets {
		for pos, r := range t {
			m[r] += parts[i].Load.network(pos, len(t))
		}
	}
	return m
}

// ratio is the largest value over the smallest.
func ratio(m map[int32]float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi / lo
}

// evenWithin reports whether every value is within tol of the mean.
func evenWithin(m map[int32]float64, tol float64) bool {
	total := 0.0
	for _, v := range m {
		total += v
	}
	mean := total / float64(len(m))
	for _, v := range m {
		if math.Abs(v-mean) > tol*mean {
			return false
		}
	}
	return true
}

// placed is parts with targets as their replicas, as the balancer's next
// round sees them once the moves are done.
func placed(parts []Partition, targets [][]int32) []Partition {
	out := slices.Clone(parts)
	for i := range out {
		out[i].Replicas = slices.Clone(targets[i])
	}
	return out
}

// TestPlaceByLoadHotPartition (issue 31): 24 partitions of two replicas on
// three agents, one of them producing 10 times the others' rate; a fourth
// agent joins. Counts alone leave the hot partition's agents far above
// the rest; by load every agent ends within the tolerance of the mean,
// copying not many more replicas than the counts' plan, and placing the
// result again moves nothing.
func TestPlaceByLoadHotPartition(t *testing.T) {
	ids := []int32{0, 1, 2, 3}
	for _, hot := range []int{0, 5, 23} {
		t.Run(fmt.Sprint("hot partition ", hot), func(t *testing.T) {
			parts := withLoad(roundRobin("t", 24, 2, []int32{0, 1, 2}), Load{BytesIn: 100 << 10, DiskBytes: 8 << 20}, hot, 10)
			byCount := Place(agentsOf(ids...), parts)
			byLoad := PlaceByLoad(agentsOf(ids...), parts, DefaultBalance())
			countNet, loadNet := network(ids, parts, byCount), network(ids, parts, byLoad)
			t.Logf("by count: ratio %.2f, %v; by load: ratio %.2f, %v; moves %d and %d",
				ratio(countNet), countNet, ratio(loadNet), loadNet, moves(parts, byCount), moves(parts, byLoad))
			if !evenWithin(loadNet, DefaultBalance().Tolerance) {
				t.Errorf("by load, network per agent %v is not within 10%% of the mean", loadNet)
			}
			if ratio(countNet) < 1.5 {
				t.Errorf("by count, the network ratio is %.2f: the case does not show the problem", ratio(countNet))
			}
			if n, c := moves(parts, byLoad), moves(parts, byCount); n > c+4 {
				t.Errorf("by load %d replicas move, by count %d", n, c)
			}
			if again := PlaceByLoad(agentsOf(ids...), placed(parts, byLoad), DefaultBalance()); fmt.Sprint(again) != fmt.Sprint(byLoad) {
				t.Errorf("placing the result again changes it:\n%v\n%v", byLoad, again)
			}
			for i, tg := range byLoad {
				if len(tg) != 2 || tg[0] == tg[1] {
					t.Errorf("partition %d: target %v", i, tg)
				}
			}
		})
	}
}

// TestPlaceByLoadEqualLoadsIsPlace: when every partition weighs the same and
// there are enough of them, balancing counts balances load, and
// PlaceByLoad returns what Place does. (With few partitions, counts within
// one of each other can still leave an agent's network beyond the
// tolerance: TestPlaceByLoadRacks has such a case.)
func TestPlaceByLoadEqualLoadsIsPlace(t *testing.T) {
	l := Load{BytesIn: 200 << 10, BytesOut: 300 << 10, DiskBytes: 1 << 30}
	for _, c := range []struct {
		name   string
		agents []Agent
		parts  []Partition
	}{
		{"join", agentsOf(0, 1, 2, 3), roundRobin("t", 12, 2, []int32{0, 1, 2})},
		{"join of many", agentsOf(0, 1, 2, 3), roundRobin("t", 120, 3, []int32{0, 1, 2})},
		{"leave", agentsOf(0, 1, 2), roundRobin("t", 12, 2, []int32{0, 1, 2, 3})},
		{"balanced", agentsOf(0, 1, 2), roundRobin("t", 30, 3, []int32{0, 1, 2})},
	} {
		t.Run(c.name, func(t *testing.T) {
			parts := withLoad(c.parts, l, -1, 1)
			want := Place(c.agents, parts)
			if got := PlaceByLoad(c.agents, parts, DefaultBalance()); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("PlaceByLoad\n%v\nPlace\n%v", got, want)
			}
			// No load at all is counts too.
			if got := PlaceByLoad(c.agents, c.parts, DefaultBalance()); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("PlaceByLoad without loads\n%v\nPlace\n%v", got, want)
			}
		})
	}
}

// TestPlaceByLoadNoMovesWithinTolerance: a placement whose agents all
// carry within the tolerance of the mean stays as it is, even when its
// counts are uneven because one agent holds a hot partition and little
// else: counts come after load.
func TestPlaceByLoadNoMovesWithinTolerance(t *testing.T) {
	cold := Load{BytesIn: 100 << 10, DiskBytes: 1 << 20}
	var parts []Partition
	add := func(replicas []int32, l Load) {
		parts = append(parts, Partition{Topic: "t", Index: int32(len(parts)), Replicas: replicas, Load: l})
	}
	// Agent 0: the hot partition alone (1000 KiB/s). Agents 1 and 2:
	// ten cold ones each, at 90 to 110 KiB/s (a spread of measurements).
	add([]int32{0}, Load{BytesIn: 1000 << 10, DiskBytes: 10 << 20})
	for i := range 20 {
		l := cold
		l.BytesIn += float64((i%3 - 1) * 10 << 10)
		add([]int32{int32(1 + i%2)}, l)
	}
	targets := PlaceByLoad(agentsOf(0, 1, 2), parts, DefaultBalance())
	for i, tg := range targets {
		if !slices.Equal(tg, parts[i].Replicas) {
			t.Errorf("partition %d: %v -> %v", i, parts[i].Replicas, tg)
		}
	}
	// By count, the hot agent is given cold partitions on top.
	if n := moves(parts, Place(agentsOf(0, 1, 2), parts)); n == 0 {
		t.Error("Place moved nothing: the case does not show the difference")
	}
}

// TestPlaceByLoadLeadershipFirst: three agents hold eight partitions of
// two replicas evenly, and the agent that leads the hot partition carries
// twice what the least loaded one does. Handing preferred leadership to
// followers evens it out, so no replica moves: only the order of replicas
// changes.
func TestPlaceByLoadLeadershipFirst(t *testing.T) {
	ids := []int32{0, 1, 2}
	parts := withLoad(roundRobin("t", 8, 2, ids), Load{BytesIn: 100 << 10, BytesOut: 100 << 10, DiskBytes: 1 << 20}, 0, 5)
	before := network(ids, parts, replicasOf(parts))
	targets := PlaceByLoad(agentsOf(ids...), parts, DefaultBalance())
	after := network(ids, parts, targets)
	t.Logf("network before %v, after %v; targets %v", before, after, targets)
	if evenWithin(before, 0.1) {
		t.Fatalf("network before %v is already balanced: the case shows nothing", before)
	}
	if n := moves(parts, targets); n != 0 {
		t.Errorf("%d replicas move; swapping leaders was enough", n)
	}
	if !evenWithin(after, 0.1) {
		t.Errorf("network after %v is not within 10%% of the mean", after)
	}
}

func replicasOf(parts []Partition) [][]int32 {
	out := make([][]int32, len(parts))
	for i, p := range parts {
		out[i] = p.Replicas
	}
	return out
}

// TestPlaceByLoadRacks: with three racks and three replicas a join into
// rack a balances the hot partition's load without ever putting two
// replicas of a partition in one rack.
func TestPlaceByLoadRacks(t *testing.T) {
	agents := []Agent{{0, "a"}, {1, "b"}, {2, "c"}, {3, "a"}, {4, "b"}, {5, "c"}, {6, "a"}}
	rack := map[int32]string{}
	var ids []int32
	for _, a := range agents {
		rack[a.ID] = a.Rack
		ids = append(ids, a.ID)
	}
	parts := withLoad(roundRobin("t", 30, 3, []int32{0, 1, 2, 3, 4, 5}), Load{BytesIn: 100 << 10, BytesOut: 50 << 10, DiskBytes: 4 << 20}, 7, 10)
	targets := PlaceByLoad(agents, parts, DefaultBalance())
	for i, tg := range targets {
		seen := map[string]bool{}
		for _, r := range tg {
			seen[rack[r]] = true
		}
		if len(seen) != 3 {
			t.Errorf("partition %d: %v spans racks %v", i, tg, seen)
		}
	}
	byCount := network(ids, parts, Place(agents, parts))
	byLoad := network(ids, parts, targets)
	t.Logf("ratio by count %.2f, by load %.2f", ratio(byCount), ratio(byLoad))
	if ratio(byLoad) >= ratio(byCount) {
		t.Errorf("by load the ratio is %.2f, by count %.2f", ratio(byLoad), ratio(byCount))
	}
}

// TestPlaceByLoadDisk: when network is even, disk is balanced next, by
// moving the replicas with the least data that do it.
func TestPlaceByLoadDisk(t *testing.T) {
	var parts []Partition
	// Two agents, four partitions each, no traffic; agent 0's hold
	// 1 GiB each, agent 1's 100 MiB.
	for i := range 8 {
		disk := int64(1 << 30)
		if i >= 4 {
			disk = 100 << 20
		}
		parts = append(parts, Partition{Topic: "t", Index: int32(i), Replicas: []int32{int32(i / 4)}, Load: Load{DiskBytes: disk}})
	}
	targets := PlaceByLoad(agentsOf(0, 1), parts, DefaultBalance())
	disk := map[int32]int64{}
	for i, tg := range targets {
		disk[tg[0]] += parts[i].Load.DiskBytes
	}
	t.Logf("targets %v, disk %v", targets, disk)
	if d := float64(disk[0]-disk[1]) / float64(disk[0]+disk[1]); math.Abs(d) > 0.5 {
		t.Errorf("disk per agent %v", disk)
	}
}

// TestPlaceByLoadRandom: on random clusters (racks, fixed partitions,
// agents gone, random loads) PlaceByLoad's targets are valid, deterministic
// and a fixed point: placing them again moves nothing. The seed is logged.
func TestPlaceByLoadRandom(t *testing.T) {
	rng := seededRand(t)
	for round := range 300 {
		nAgents := 1 + rng.IntN(7)
		var agents []Agent
		var all []int32
		for i := range nAgents + 2 { // two more that are not active
			id := int32(i * 2)
			all = append(all, id)
			if i < nAgents {
				agents = append(agents, Agent{ID: id, Rack: string(rune('a' + rng.IntN(3)))})
			}
		}
		var parts []Partition
		for i := range 1 + rng.IntN(40) {
			rf := 1 + rng.IntN(min(3, len(all)))
			perm := rng.Perm(len(all))[:rf]
			var replicas []int32
			for _, j := range perm {
				replicas = append(replicas, all[j])
			}
			l := Load{BytesIn: float64(rng.IntN(1 << 20)), BytesOut: float64(rng.IntN(1 << 20)), DiskBytes: int64(rng.IntN(1 << 30))}
			if rng.IntN(10) == 0 {
				l.BytesIn *= 20
			}
			parts = append(parts, Partition{Topic: "t", Index: int32(i), Replicas: replicas, ReplicationFactor: rf,
				Fixed: rng.IntN(8) == 0, Load: l})
		}
		bal := DefaultBalance()
		got := PlaceByLoad(agents, parts, bal)
		if again := PlaceByLoad(agents, parts, bal); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("round %d: not deterministic", round)
		}
		active := map[int32]bool{}
		for _, a := range agents {
			active[a.ID] = true
		}
		for i, tg := range got {
			p := parts[i]
			if p.Fixed {
				if !slices.Equal(tg, p.Replicas) {
					t.Fatalf("round %d: fixed partition %d changed %v -> %v", round, i, p.Replicas, tg)
				}
				continue
			}
			if want := min(p.ReplicationFactor, len(agents)); len(tg) != want {
				t.Fatalf("round %d: partition %d has %d replicas %v, want %d", round, i, len(tg), tg, want)
			}
			for j, r := range tg {
				if !active[r] || slices.Contains(tg[:j], r) {
					t.Fatalf("round %d: partition %d target %v: inactive or repeated agent %d", round, i, tg, r)
				}
			}
		}
		next := placed(parts, got)
		if again := PlaceByLoad(agents, next, bal); fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("round %d: placing the result again changes it\nagents %v\nparts %+v\nfirst  %v\nsecond %v", round, agents, parts, got, again)
		}
	}
}
