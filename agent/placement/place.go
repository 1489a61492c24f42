package placement

// Placement (docs/design.md §8): a pure, deterministic function from the active
// agents and the current replica sets to target replica sets that
//
//   - put no replica on an agent that is not active (draining, gone),
//   - spread replicas so that agents' counts differ by at most one,
//   - spread preferred leaders (the first replica) the same way,
//   - keep a partition's replicas on different racks where racks allow,
//   - and move as few replicas as possible: a replica moves only to fix
//     one of the above, and leaders are balanced by reordering replicas,
//     which copies nothing.
//
// PlaceByLoad (load.go) puts the agents' measured network and disk load
// before the counts.

import (
	"cmp"
	"slices"
)

// Agent is an agent that may hold replicas.
type Agent struct {
	ID   int32
	Rack string
}

// Partition is one partition's current replicas, in preferred
// order. A Fixed partition is counted but never changed (the balancer
// fixes partitions with replicas on agents that are down, so that a
// restart does not cause a move). ReplicationFactor is how many replicas
// it should have; 0 means len(Replicas).
type Partition struct {
	Topic             string
	Index             int32
	Replicas          []int32
	ReplicationFactor int
	Fixed             bool
	// Load is what the partition costs the agents that hold it; only
	// PlaceByLoad reads it.
	Load Load
}

// placer holds the working state of one Place call.
type placer struct {
	agents  []Agent
	rack    map[int32]string
	load    map[int32]int
	leaders map[int32]int
	parts   []Partition // sorted copy; Replicas are owned
	// orig are each part's replicas before Place: balancing moves a
	// replica Place added before one that holds data.
	orig [][]int32
	// byLoad is set by PlaceByLoad: the network and disk each agent
	// carries (load.go), kept up to date by every change, and the count
	// steps refuse what would unbalance them.
	byLoad     bool
	bal        Balance
	net, disk  map[int32]float64
	netSpread  spread
	diskSpread spread
	dataOrder  []int // byData's answer, computed once
}

// maxPlacementRounds bounds each balancing loop; every round moves one
// replica or leader closer to even, so real inputs finish far below it.
const maxPlacementRounds = 1 << 16

// Place returns the target replicas of each partition, in the order of
// parts. A partition gets its replication factor, unless fewer active
// agents than that exist (then as many as there are agents): a partition
// left short by a drain grows back once agents are there.
func Place(agents []Agent, parts []Partition) [][]int32 {
	return place(agents, parts, nil)
}

// place is Place, and PlaceByLoad when bal is set.
func place(agents []Agent, parts []Partition, bal *Balance) [][]int32 {
	pl := &placer{rack: map[int32]string{}, load: map[int32]int{}, leaders: map[int32]int{},
		net: map[int32]float64{}, disk: map[int32]float64{}}
	if bal != nil {
		pl.byLoad, pl.bal = true, *bal
	}
	pl.agents = slices.Clone(agents)
	slices.SortFunc(pl.agents, func(a, b Agent) int { return cmp.Compare(a.ID, b.ID) })
	pl.agents = slices.CompactFunc(pl.agents, func(a, b Agent) bool { return a.ID == b.ID })
	for _, a := range pl.agents {
		pl.rack[a.ID] = a.Rack
		pl.load[a.ID] = 0
		pl.leaders[a.ID] = 0
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		if c := cmp.Compare(parts[x].Topic, parts[y].Topic); c != 0 {
			return c
		}
		return cmp.Compare(parts[x].Index, parts[y].Index)
	})
	for _, i := range order {
		p := parts[i]
		p.Replicas = slices.Clone(p.Replicas)
		pl.parts = append(pl.parts, p)
		pl.orig = append(pl.orig, parts[i].Replicas)
	}
	if len(pl.agents) > 0 {
		pl.dropInactive()
		pl.count()
		pl.fill()
		if pl.byLoad {
			pl.balanceByLoad()
		} else {
			pl.balanceReplicas()
			pl.balanceLeaders()
		}
	}
	out := make([][]int32, len(parts))
	for k, i := range order {
		out[i] = pl.parts[k].Replicas
	}
	return out
}

func (pl *placer) active(id int32) bool { _, ok := pl.rack[id]; return ok }

// dropInactive removes replicas on agents that are not active from every
// partition that is not fixed; fill replaces them. It remembers each
// partition's replication factor in want.
func (pl *placer) dropInactive() {
	for i := range pl.parts {
		p := &pl.parts[i]
		if p.Fixed {
			continue
		}
		want := p.ReplicationFactor
		if want <= 0 {
			want = len(p.Replicas)
		}
		rf := min(want, len(pl.agents))
		kept := slices.DeleteFunc(p.Replicas, func(r int32) bool { return !pl.active(r) })
		if len(kept) > rf {
			kept = kept[:rf]
		}
		// Short partitions are filled with placeholder -1 entries, kept
		// in place so that a replaced leader's position is filled again.
		for len(kept) < rf {
			kept = append(kept, -1)
		}
		p.Replicas = kept
	}
}

func (pl *placer) count() {
	for k, p := range pl.parts {
		for i, r := range p.Replicas {
			if pl.active(r) {
				pl.add(k, i, r, 1)
			}
		}
	}
}

// add counts (sign 1) or uncounts (-1) the replica at position pos of
// part k as agent r's.
func (pl *placer) add(k, pos int, r int32, sign int) {
	pl.load[r] += sign
	if pos == 0 {
		pl.leaders[r] += sign
	}
	if pl.byLoad {
		p := &pl.parts[k]
		pl.net[r] += float64(sign) * p.Load.network(pos, len(p.Replicas))
		pl.disk[r] += float64(sign) * float64(p.Load.DiskBytes)
	}
}

// fill gives every placeholder the least-loaded agent not yet in the
// partition, preferring racks the partition does not use yet.
func (pl *placer) fill() {
	for i := range pl.parts {
		p := &pl.parts[i]
		for j, r := range p.Replicas {
			if r >= 0 {
				continue
			}
			best := pl.pick(p.Replicas, -1)
			p.Replicas[j] = best
			pl.add(i, j, best, 1)
		}
	}
}

// pick returns the best agent to add to replicas in place of old (-1: a
// placeholder): not in the partition, new rack first, then (PlaceByLoad)
// the least network, then the fewest replicas, then lowest id.
func (pl *placer) pick(replicas []int32, old int32) int32 {
	best, bestKey := int32(-1), [4]float64{}
	for _, a := range pl.agents {
		if slices.Contains(replicas, a.ID) {
			continue
		}
		key := [4]float64{float64(pl.rackPenalty(replicas, old, a.ID)), pl.net[a.ID], float64(pl.load[a.ID]), float64(a.ID)}
		if best < 0 || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestKey = a.ID, key
		}
	}
	return best
}

// rackPenalty is how many other replicas of the partition (old excluded)
// share cand's rack.
func (pl *placer) rackPenalty(replicas []int32, old, cand int32) int {
	n := 0
	for _, r := range replicas {
		if r != old && r >= 0 && pl.rack[r] == pl.rack[cand] {
			n++
		}
	}
	return n
}

// balanceReplicas moves one replica at a time from the most loaded agent
// to the least loaded one until counts differ by at most one, never
// putting more replicas of a partition in one rack than before.
func (pl *placer) balanceReplicas() {
	for range maxPlacementRounds {
		if !pl.improve(pl.load, pl.moveReplica) {
			return
		}
	}
}

// improve tries pairs from the most loaded agent down and the least loaded
// up, whose counts differ by more than one, until step succeeds for one;
// it reports whether any did.
func (pl *placer) improve(counts map[int32]int, step func(from, to int32) bool) bool {
	byCount := make([]int32, 0, len(pl.agents))
	for _, a := range pl.agents {
		byCount = append(byCount, a.ID)
	}
	slices.SortStableFunc(byCount, func(x, y int32) int { return cmp.Compare(counts[y], counts[x]) })
	for _, from := range byCount {
		for k := len(byCount) - 1; k >= 0; k-- {
			to := byCount[k]
			if counts[from]-counts[to] <= 1 {
				break
			}
			if step(from, to) {
				return true
			}
		}
	}
	return false
}

// moveReplica moves one replica from from to to: one that Place itself
// added (fill) if any can go, since moving it copies nothing more, else
// one that holds data (PlaceByLoad: the one with the least, and only one
// whose move leaves network and disk no less balanced).
func (pl *placer) moveReplica(from, to int32) bool {
	for _, added := range []bool{true, false} {
		for _, i := range pl.byData() {
			p := &pl.parts[i]
			j := slices.Index(p.Replicas, from)
			if p.Fixed || j < 0 || slices.Contains(p.Replicas, to) || added && slices.Contains(pl.orig[i], from) {
				continue
			}
			if !pl.rackAllows(i, from, to) || pl.byLoad && !pl.keepsLoad(i, j, to) {
				continue
			}
			pl.move(i, j, to)
			return true
		}
	}
	return false
}

// rackAllows reports whether part k's replica on from may move to to:
// never into a rack that more of its other replicas share.
func (pl *placer) rackAllows(k int, from, to int32) bool {
	p := &pl.parts[k]
	return pl.rackPenalty(p.Replicas, from, to) <= pl.rackPenalty(p.Replicas, from, from)
}

// move gives the replica at position pos of part k to agent to.
func (pl *placer) move(k, pos int, to int32) {
	p := &pl.parts[k]
	pl.add(k, pos, p.Replicas[pos], -1)
	p.Replicas[pos] = to
	pl.add(k, pos, to, 1)
}

// balanceLeaders evens out preferred leaders by swapping a replica to the
// front of a partition's list, which moves no data.
func (pl *placer) balanceLeaders() {
	for range maxPlacementRounds {
		if !pl.improve(pl.leaders, pl.swapLeader) {
			return
		}
	}
}

func (pl *placer) swapLeader(from, to int32) bool {
	for i := range pl.parts {
		p := &pl.parts[i]
		if p.Fixed || len(p.Replicas) == 0 || p.Replicas[0] != from {
			continue
		}
		j := slices.Index(p.Replicas, to)
		if j < 0 || pl.byLoad && !pl.keepsNetwork(i, j) {
			continue
		}
		pl.swap(i, j)
		return true
	}
	return false
}

// swap makes the replica at position j of part k its preferred leader,
// and the leader's replica takes position j: no data moves.
func (pl *placer) swap(k, j int) {
	p := &pl.parts[k]
	from, to := p.Replicas[0], p.Replicas[j]
	pl.add(k, 0, from, -1)
	pl.add(k, j, to, -1)
	p.Replicas[0], p.Replicas[j] = to, from
	pl.add(k, 0, to, 1)
	pl.add(k, j, from, 1)
}
