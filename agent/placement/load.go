package placement

// Load-aware placement (docs/design.md §8, issue 31): Place evens out
// counts, so a partition taking 100 MB/s weighs what a 1 KB/s one does,
// and an agent added because another's network is saturated may take
// cold partitions and leave the hot one where it is. PlaceByLoad evens out,
// in this order,
//
//  1. network: the bytes per second each agent receives and sends for
//     its replicas. A leader receives its producers' bytes, sends its
//     consumers theirs and sends every follower a copy; a follower
//     receives that copy. So the preferred leader of a partition with R
//     replicas carries BytesIn*R + BytesOut and each follower BytesIn;
//  2. disk: the bytes each agent keeps locally for its replicas;
//  3. replica counts, then preferred leader counts, as Place does,
//
// each of the first two only once an agent is off the mean by more than
// Balance.Tolerance (and by more than a floor, so that a nearly idle
// cluster is placed by counts). It then aims at half the tolerance, so
// that a small drift in measured rates does not move a replica back and
// forth.
//
// Every step strictly lowers (network imbalance, disk imbalance, sum of
// squared replica counts, sum of squared leader counts), compared in that
// order, where an imbalance is the sum over agents of the squared
// distance from the mean beyond the half-tolerance band. So the steps
// end, and what they end on is a fixed point: placing the result again
// moves nothing, which keeps the balancer, which calls PlaceByLoad every
// round on the placement it wrote, from moving replicas back and forth.
//
// Moves cost copies and swaps of the preferred leader cost nothing, so
// network balancing tries every swap before any move, and picks moves by
// the imbalance they remove per byte they copy: replicas Place itself
// added (to replace a lost or draining agent's) copy nothing more, and
// cold partitions usually hold less than hot ones. Moves keep the rack
// rule of Place: never into a rack more of the partition's other
// replicas share.

import (
	"cmp"
	"math"
	"slices"
)

// Load is what a partition costs the agents that hold it, as its replicas
// measured it (a moving average).
type Load struct {
	// BytesIn is bytes per second appended: the leader receives them from
	// producers and each follower copies them from the leader.
	BytesIn float64
	// BytesOut is bytes per second the leader sends to consumers (its
	// followers' fetches are BytesIn for each of them).
	BytesOut float64
	// DiskBytes is what each replica keeps on local disk; moving a
	// replica copies about that much (for a tiered topic, only the tail
	// not yet in the bucket).
	DiskBytes int64
}

// network is what the replica at position pos of a partition of replicas
// replicas carries.
func (l Load) network(pos, replicas int) float64 {
	if pos == 0 {
		return l.BytesIn*float64(replicas) + l.BytesOut
	}
	return l.BytesIn
}

// Balance is how PlaceByLoad weighs load against counts.
type Balance struct {
	// Tolerance is how far from the mean, as a fraction of it, an agent's
	// network or disk load may be before replicas move for it; balancing
	// then aims at half of it. 0 balances counts only, as Place.
	Tolerance float64
	// NetworkFloor (bytes per second) and DiskFloor (bytes) are the least
	// distance from the mean that counts as imbalance, whatever the
	// tolerance: below them, counts decide.
	NetworkFloor float64
	DiskFloor    float64
}

// DefaultBalance is the balancer's default: 10%, 32 KiB/s, 64 MiB.
func DefaultBalance() Balance {
	return Balance{Tolerance: 0.10, NetworkFloor: 32 << 10, DiskFloor: 64 << 20}
}

// moveCostFloor is added to the bytes a move copies when moves are
// compared by imbalance removed per byte, so that a replica with no data
// is cheap but not free of all cost.
const moveCostFloor = 1 << 20

// PlaceByLoad is Place with each partition's Load weighed first (the file
// comment). With bal.Tolerance 0 it is Place.
//
// When Place's placement keeps every agent within the tolerance, it is
// the answer: partitions of equal load are placed as by counts, and a
// cluster whose load counts cannot unbalance moves as Place moves it.
// Otherwise the steps run from parts; and if evening out the counts of
// their result would keep every agent within the tolerance, that is the
// answer, because the next call would otherwise take it (and copy twice).
func PlaceByLoad(agents []Agent, parts []Partition, bal Balance) [][]int32 {
	if bal.Tolerance <= 0 {
		return Place(agents, parts)
	}
	byCount := Place(agents, parts)
	if withinTolerance(agents, parts, byCount, bal) {
		return byCount
	}
	byLoad := place(agents, parts, &bal)
	next := slices.Clone(parts)
	for i := range next {
		next[i].Replicas = byLoad[i]
	}
	if again := Place(agents, next); withinTolerance(agents, parts, again, bal) {
		return again
	}
	return byLoad
}

// withinTolerance reports whether, with parts on targets, no active agent's
// network or disk is further from the mean than bal allows.
func withinTolerance(agents []Agent, parts []Partition, targets [][]int32, bal Balance) bool {
	net, disk := map[int32]float64{}, map[int32]float64{}
	for _, a := range agents {
		net[a.ID], disk[a.ID] = 0, 0
	}
	for i, t := range targets {
		for pos, r := range t {
			if _, ok := net[r]; ok {
				net[r] += parts[i].Load.network(pos, len(t))
				disk[r] += float64(parts[i].Load.DiskBytes)
			}
		}
	}
	return !newSpread(net, bal.Tolerance, bal.NetworkFloor).triggered(net) &&
		!newSpread(disk, bal.Tolerance, bal.DiskFloor).triggered(disk)
}

// spread measures how uneven one quantity is over the agents.
type spread struct {
	mean float64
	// trigger is the distance from the mean past which balancing starts;
	// band is the distance it aims to stay within.
	trigger, band float64
	// eps absorbs rounding: a step must lower the imbalance by more, and
	// a step that must not raise it may raise it by no more.
	eps float64
}

func newSpread(values map[int32]float64, tolerance, floor float64) spread {
	total := 0.0
	for _, v := range values {
		total += v
	}
	mean := 0.0
	if len(values) > 0 {
		mean = total / float64(len(values))
	}
	return spread{mean: mean, trigger: max(tolerance*mean, floor), band: max(tolerance*mean/2, floor),
		eps: 1e-9 * (mean*mean + 1)}
}

// cost is one agent's share of the imbalance.
func (s spread) cost(v float64) float64 {
	d := math.Abs(v-s.mean) - s.band
	if d <= 0 {
		return 0
	}
	return d * d
}

// delta is the change in imbalance when amount moves from an agent at a
// to one at b.
func (s spread) delta(a, b, amount float64) float64 {
	return s.cost(a-amount) + s.cost(b+amount) - s.cost(a) - s.cost(b)
}

// triggered reports whether an agent is further from the mean than the
// tolerance.
func (s spread) triggered(values map[int32]float64) bool {
	for _, v := range values {
		if math.Abs(v-s.mean) > s.trigger {
			return true
		}
	}
	return false
}

// balanceByLoad runs the steps until none applies (the file comment).
func (pl *placer) balanceByLoad() {
	// Totals do not change from here on: steps only move load around.
	pl.netSpread = newSpread(pl.activeValues(pl.net), pl.bal.Tolerance, pl.bal.NetworkFloor)
	pl.diskSpread = newSpread(pl.activeValues(pl.disk), pl.bal.Tolerance, pl.bal.DiskFloor)
	for range maxPlacementRounds {
		changed := false
		for range maxPlacementRounds {
			if !pl.improve(pl.load, pl.moveReplica) {
				break
			}
			changed = true
		}
		for range maxPlacementRounds {
			if !pl.improve(pl.leaders, pl.swapLeader) {
				break
			}
			changed = true
		}
		// Nothing moves for an agent within the tolerance; once one is
		// out, preferred leaders are swapped towards half of it, but
		// replicas are copied only while an agent is out.
		if pl.netSpread.triggered(pl.net) {
			for range maxPlacementRounds {
				if !pl.swapStep() && !(pl.netSpread.triggered(pl.net) && pl.networkMove()) {
					break
				}
				changed = true
			}
		}
		for range maxPlacementRounds {
			if !pl.diskSpread.triggered(pl.disk) || !pl.diskMove() {
				break
			}
			changed = true
		}
		if !changed {
			return
		}
	}
}

// activeValues is values restricted to the active agents (a fixed
// partition's replicas on other agents are not counted at all).
func (pl *placer) activeValues(values map[int32]float64) map[int32]float64 {
	out := make(map[int32]float64, len(pl.agents))
	for _, a := range pl.agents {
		out[a.ID] = values[a.ID]
	}
	return out
}

// keepsNetwork reports whether making position j of part k its preferred
// leader leaves the network no less balanced.
func (pl *placer) keepsNetwork(k, j int) bool {
	p := &pl.parts[k]
	from, to := p.Replicas[0], p.Replicas[j]
	amount := p.Load.network(0, len(p.Replicas)) - p.Load.network(j, len(p.Replicas))
	return pl.netSpread.delta(pl.net[from], pl.net[to], amount) <= pl.netSpread.eps
}

// keepsLoad reports whether moving the replica at position pos of part k
// to agent to leaves network and disk no less balanced.
func (pl *placer) keepsLoad(k, pos int, to int32) bool {
	p := &pl.parts[k]
	from := p.Replicas[pos]
	net := p.Load.network(pos, len(p.Replicas))
	disk := float64(p.Load.DiskBytes)
	return pl.netSpread.delta(pl.net[from], pl.net[to], net) <= pl.netSpread.eps &&
		pl.diskSpread.delta(pl.disk[from], pl.disk[to], disk) <= pl.diskSpread.eps
}

// swapStep swaps the preferred leader of the partition where that lowers
// the network imbalance most, and reports whether any did.
func (pl *placer) swapStep() bool {
	s := pl.netSpread
	bestK, bestJ, best := -1, 0, -s.eps
	for k := range pl.parts {
		p := &pl.parts[k]
		if p.Fixed || len(p.Replicas) < 2 || !pl.active(p.Replicas[0]) {
			continue
		}
		from := p.Replicas[0]
		for j := 1; j < len(p.Replicas); j++ {
			to := p.Replicas[j]
			if !pl.active(to) {
				continue
			}
			amount := p.Load.network(0, len(p.Replicas)) - p.Load.network(j, len(p.Replicas))
			if d := s.delta(pl.net[from], pl.net[to], amount); d < best {
				bestK, bestJ, best = k, j, d
			}
		}
	}
	if bestK < 0 {
		return false
	}
	pl.swap(bestK, bestJ)
	return true
}

// networkMove takes the move that lowers the network imbalance most per
// byte copied.
func (pl *placer) networkMove() bool {
	return pl.moveStep(pl.netSpread, pl.net, func(p *Partition, pos int) float64 { return p.Load.network(pos, len(p.Replicas)) }, nil)
}

// diskMove takes the move that lowers the disk imbalance most per byte
// copied without raising the network imbalance.
func (pl *placer) diskMove() bool {
	return pl.moveStep(pl.diskSpread, pl.disk, func(p *Partition, _ int) float64 { return float64(p.Load.DiskBytes) }, &pl.netSpread)
}

// moveStep moves the replica whose move lowers the imbalance s of values
// most per byte copied, where amountOf is what a replica adds to values;
// with keep set, only moves that do not raise that imbalance of the
// network qualify. Only agents outside s's band can gain from a move, so
// a pair of agents both inside it is skipped.
func (pl *placer) moveStep(s spread, values map[int32]float64, amountOf func(*Partition, int) float64, keep *spread) bool {
	bestK, bestPos, bestTo, best := -1, 0, int32(-1), 0.0
	for _, k := range pl.byData() {
		p := &pl.parts[k]
		if p.Fixed {
			continue
		}
		copied := float64(p.Load.DiskBytes)
		for pos, from := range p.Replicas {
			if !pl.active(from) {
				continue
			}
			amount := amountOf(p, pos)
			if amount <= 0 {
				continue
			}
			cost := copied
			if !slices.Contains(pl.orig[k], from) {
				cost = 0 // added by Place: nothing copied yet
			}
			for _, a := range pl.agents {
				to := a.ID
				if values[to] >= values[from] || slices.Contains(p.Replicas, to) {
					continue
				}
				if values[from] <= s.mean+s.band && values[to] >= s.mean-s.band {
					continue
				}
				d := s.delta(values[from], values[to], amount)
				if d >= -s.eps || !pl.rackAllows(k, from, to) {
					continue
				}
				if keep != nil {
					net := p.Load.network(pos, len(p.Replicas))
					if keep.delta(pl.net[from], pl.net[to], net) > keep.eps {
						continue
					}
				}
				if score := d / (cost + moveCostFloor); bestK < 0 || score < best {
					bestK, bestPos, bestTo, best = k, pos, to, score
				}
			}
		}
	}
	if bestK < 0 {
		return false
	}
	pl.move(bestK, bestPos, bestTo)
	return true
}

// byData lists the parts' indexes by the data a replica holds, least
// first (ties, and every part for Place, in topic and index order): the
// order in which replicas are offered for a move.
func (pl *placer) byData() []int {
	if pl.dataOrder == nil {
		pl.dataOrder = make([]int, len(pl.parts))
		for i := range pl.dataOrder {
			pl.dataOrder[i] = i
		}
		if pl.byLoad {
			slices.SortStableFunc(pl.dataOrder, func(x, y int) int {
				return cmp.Compare(pl.parts[x].Load.DiskBytes, pl.parts[y].Load.DiskBytes)
			})
		}
	}
	return pl.dataOrder
}
