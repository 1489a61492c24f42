package chaos

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// The schedule is pure: a Planner turns a seed into a sequence of faults,
// the same sequence for the same seed and Config. Which agent a fault that
// targets "the leader of partition k" hits is decided when it is injected,
// from the cluster's Metadata; everything else is in the plan.

// FaultKind is one kind of fault the harness injects.
type FaultKind string

const (
	// FaultKill sends SIGKILL to an agent and restarts it after Hold.
	FaultKill FaultKind = "kill"
	// FaultPause sends SIGSTOP to an agent and SIGCONT after Hold, which
	// is longer than failure detection and the replica lag limit.
	FaultPause FaultKind = "pause"
	// FaultStallKill stops (SIGSTOP) the followers of a partition for
	// Stall, shorter than failure detection, while its leader keeps
	// taking produces; then SIGKILLs the leader, continues the followers,
	// and restarts the leader after Hold. A leader that acknowledges
	// before its followers have the records loses them here.
	FaultStallKill FaultKind = "stall-kill"
	// FaultStore makes the store proxy answer with errors, resets and
	// latency (Store) for Hold.
	FaultStore FaultKind = "store"
	// FaultWipe SIGKILLs an agent, deletes everything in its data
	// directory (a lost disk, replaced by an empty one) and restarts it
	// after Hold with the same agent id. It must copy its replicas from
	// the others again; the cluster must lose nothing acknowledged. Most
	// holds are shorter than failure detection, so the agent often comes
	// back while the store still names it leader and lists it in the ISR:
	// it must leave the ISR rather than lead its empty log
	// (docs/reliability.md, "wipe").
	FaultWipe FaultKind = "wipe"
	// FaultNetCut cuts an agent off from the other agents (or, Partial,
	// from one of them) for Hold, in the network namespaces of a run with
	// Config.Network: gossip, replication and elections see a real
	// partition, while clients and the store still reach every agent.
	FaultNetCut FaultKind = "netcut"
	// FaultStoreCut cuts an agent off from the store for Hold (Config.Network
	// and a MinIO store): uploads, manifest and state writes time out.
	FaultStoreCut FaultKind = "storecut"
	// FaultStoreFail makes the store proxy answer a share of requests with
	// 500 InternalError and cut a share of PUTs off half-way through their
	// body (the store never completes them; the client sees a reset), for
	// Hold.
	FaultStoreFail FaultKind = "storefail"
	// FaultDiskFull fills an agent's data directory, a small filesystem of
	// its own (Config.DiskBytes), with a ballast file until writes fail
	// with ENOSPC, and removes it after Hold. Produces to that agent fail
	// with KAFKA_STORAGE_ERROR and its follower copies stall; nothing
	// acknowledged may be lost, and it must recover once there is room.
	FaultDiskFull FaultKind = "diskfull"
	// FaultDrain sends SIGTERM to an agent started with a drain timeout
	// (Config.DrainTimeout): it hands its leaderships over, the balancer
	// moves its replicas to the others while the workload runs, and it
	// exits; it is started again after Hold.
	FaultDrain FaultKind = "drain"
)

// AllFaults are the kinds this slice of the harness can inject.
var AllFaults = []FaultKind{FaultKill, FaultPause, FaultStallKill, FaultStore, FaultWipe, FaultNetCut, FaultStoreCut, FaultStoreFail, FaultDiskFull, FaultDrain}

// NetworkFaults need Config.Network.
var NetworkFaults = []FaultKind{FaultNetCut, FaultStoreCut}

// DefaultFaults are the kinds of DefaultConfig: those of the first slice,
// so that the seeds of the runs recorded in docs/reliability.md still give
// the same plans. FaultWipe runs in TestChaosWipe and where asked for.
var DefaultFaults = []FaultKind{FaultKill, FaultPause, FaultStallKill, FaultStore}

// StoreFault is what the store proxy does to each request while a store
// fault lasts. The zero value passes every request through unchanged.
type StoreFault struct {
	// SlowDown is the fraction of requests answered 503 SlowDown.
	SlowDown float64 `json:"slow_down,omitempty"`
	// Reset is the fraction of requests whose connection is reset: half
	// before the request reaches the store, half after the store has
	// acted on it (the answer is lost, the effect is not).
	Reset float64 `json:"reset,omitempty"`
	// Latency is added before forwarding, uniform in [MinLatency, MaxLatency].
	MinLatency time.Duration `json:"min_latency,omitempty"`
	MaxLatency time.Duration `json:"max_latency,omitempty"`
	// ServerError is the fraction of requests answered 500 InternalError
	// without reaching the store.
	ServerError float64 `json:"server_error,omitempty"`
	// HalfPut is the fraction of PUTs whose body is cut off half-way: the
	// store receives half of it and the connection breaks.
	HalfPut float64 `json:"half_put,omitempty"`
}

func (s StoreFault) String() string {
	if s.ServerError > 0 || s.HalfPut > 0 {
		return fmt.Sprintf("500 %.0f%%, PUTs cut half-way %.0f%%", s.ServerError*100, s.HalfPut*100)
	}
	return fmt.Sprintf("slowdown %.0f%%, reset %.0f%%, latency %v-%v", s.SlowDown*100, s.Reset*100, s.MinLatency, s.MaxLatency)
}

// Fault is one planned fault.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Gap is the quiet time before the fault.
	Gap time.Duration `json:"gap"`
	// Leader says the target is the leader of workload partition Target
	// (an index into the sorted list of the workload's partitions, modulo
	// its length); otherwise Target is an agent index (modulo the number
	// of agents). Unused by FaultStore; FaultStallKill always targets a
	// leader.
	Leader bool `json:"leader,omitempty"`
	Target int  `json:"target"`
	// Hold is how long the fault lasts.
	Hold time.Duration `json:"hold"`
	// Stall is how long FaultStallKill stops the followers.
	Stall time.Duration `json:"stall,omitempty"`
	// Store is FaultStore's behaviour.
	Store StoreFault `json:"store,omitempty"`
	// Partial makes FaultNetCut cut the target from one other agent only
	// (Peer, modulo the others), which both still reach the rest: the
	// partial partition in which a third agent sees both sides.
	Partial bool `json:"partial,omitempty"`
	Peer    int  `json:"peer,omitempty"`
}

func (f Fault) String() string {
	target := fmt.Sprintf("agent #%d", f.Target)
	if f.Leader || f.Kind == FaultStallKill {
		target = fmt.Sprintf("leader of partition #%d", f.Target)
	}
	switch f.Kind {
	case FaultStore, FaultStoreFail:
		return fmt.Sprintf("store for %v: %v", f.Hold, f.Store)
	case FaultStallKill:
		return fmt.Sprintf("stall-kill %s: followers stopped %v, leader down %v", target, f.Stall, f.Hold)
	case FaultNetCut:
		if f.Partial {
			return fmt.Sprintf("netcut %s from one other agent (#%d) for %v", target, f.Peer, f.Hold)
		}
		return fmt.Sprintf("netcut %s from every other agent for %v", target, f.Hold)
	}
	return fmt.Sprintf("%s %s for %v", f.Kind, target, f.Hold)
}

// Timings bound the random durations of the plan: each is uniform in
// [min, max].
type Timings struct {
	Gap       [2]time.Duration // quiet time between faults
	KillHold  [2]time.Duration // time a killed agent stays down
	PauseHold [2]time.Duration // time a paused agent stays stopped
	Stall     [2]time.Duration // followers stopped before a stall-kill
	StoreHold [2]time.Duration // time a store fault lasts
	WipeHold  [2]time.Duration // time a wiped agent stays down
	CutHold   [2]time.Duration // time a network cut lasts
}

// DefaultTimings suit the cluster flags of clusterArgs: failure detection
// in about two seconds and a replica lag limit of three, so pauses of 4 s
// or more outlast both and stalls of at most 0.6 s outlast neither; wipes,
// like kills, come back before or after.
func DefaultTimings() Timings {
	return Timings{
		Gap:       [2]time.Duration{2 * time.Second, 5 * time.Second},
		KillHold:  [2]time.Duration{time.Second, 6 * time.Second},
		PauseHold: [2]time.Duration{4 * time.Second, 8 * time.Second},
		Stall:     [2]time.Duration{300 * time.Millisecond, 600 * time.Millisecond},
		StoreHold: [2]time.Duration{3 * time.Second, 10 * time.Second},
		WipeHold:  [2]time.Duration{time.Second, 6 * time.Second},
		CutHold:   [2]time.Duration{4 * time.Second, 10 * time.Second},
	}
}

// Planner draws faults from a seeded source. Kinds are dealt from a
// shuffled deck, so that every kind comes once in each len(kinds) faults
// (a short run covers them all whatever the seed); the store's modes
// likewise. It is not safe for concurrent use.
type Planner struct {
	rng       *rand.Rand
	kinds     []FaultKind
	timings   Timings
	kindDeck  []FaultKind
	storeDeck []int
}

// NewPlanner plans faults of the given kinds (at least one) from seed.
func NewPlanner(seed uint64, kinds []FaultKind, timings Timings) *Planner {
	if len(kinds) == 0 {
		panic("chaos: NewPlanner with no fault kinds")
	}
	// The second PCG word is fixed so that the one seed printed is the
	// whole of the plan's randomness.
	return &Planner{rng: rand.New(rand.NewPCG(seed, 0x5eed)), kinds: kinds, timings: timings}
}

// deal returns the next card of *deck, reshuffling a fresh deck of cards
// when it is empty.
func deal[T any](rng *rand.Rand, deck *[]T, cards []T) T {
	if len(*deck) == 0 {
		*deck = append((*deck)[:0], cards...)
		rng.Shuffle(len(*deck), func(i, j int) { (*deck)[i], (*deck)[j] = (*deck)[j], (*deck)[i] })
	}
	c := (*deck)[0]
	*deck = (*deck)[1:]
	return c
}

// Next returns the next fault of the plan.
func (p *Planner) Next() Fault {
	f := Fault{Kind: deal(p.rng, &p.kindDeck, p.kinds), Gap: p.between(p.timings.Gap)}
	// Drawn for every kind, so that a change to one kind's parameters
	// does not shift the others'.
	f.Target = p.rng.IntN(1 << 16)
	f.Leader = p.rng.IntN(4) != 0 // most kills and pauses hit a leader
	switch f.Kind {
	case FaultKill, FaultDrain:
		f.Hold = p.between(p.timings.KillHold)
	case FaultWipe:
		f.Hold = p.between(p.timings.WipeHold)
	case FaultPause:
		f.Hold = p.between(p.timings.PauseHold)
	case FaultStallKill:
		f.Leader = true
		f.Stall = p.between(p.timings.Stall)
		f.Hold = p.between(p.timings.KillHold)
	case FaultStore:
		f.Leader = false
		f.Hold = p.between(p.timings.StoreHold)
		f.Store = p.storeFault()
	case FaultNetCut:
		f.Hold = p.between(p.timings.CutHold)
		f.Partial = p.rng.IntN(2) == 0
		f.Peer = p.rng.IntN(1 << 16)
	case FaultStoreCut, FaultDiskFull:
		f.Hold = p.between(p.timings.CutHold)
	case FaultStoreFail:
		f.Leader = false
		f.Hold = p.between(p.timings.StoreHold)
		f.Store = StoreFault{ServerError: 0.1 + 0.3*p.rng.Float64(), HalfPut: 0.2 + 0.4*p.rng.Float64()}
	default:
		panic(fmt.Sprintf("chaos: unknown fault kind %q", f.Kind))
	}
	return f
}

// storeFault is one of: 503 SlowDown on a share of requests, connection
// resets on a share, latency on every request, or all three at once.
func (p *Planner) storeFault() StoreFault {
	slowDown := 0.2 + 0.4*p.rng.Float64()
	reset := 0.05 + 0.15*p.rng.Float64()
	minLatency := time.Duration(20+p.rng.IntN(80)) * time.Millisecond
	maxLatency := minLatency + time.Duration(p.rng.IntN(500))*time.Millisecond
	switch deal(p.rng, &p.storeDeck, []int{0, 1, 2, 3}) {
	case 0:
		return StoreFault{SlowDown: slowDown}
	case 1:
		return StoreFault{Reset: reset}
	case 2:
		return StoreFault{MinLatency: minLatency, MaxLatency: maxLatency}
	default:
		return StoreFault{SlowDown: slowDown / 2, Reset: reset / 2, MinLatency: minLatency, MaxLatency: maxLatency}
	}
}

func (p *Planner) between(r [2]time.Duration) time.Duration {
	if r[1] <= r[0] {
		return r[0]
	}
	// Whole milliseconds: plans print and compare cleanly.
	ms := int64(r[1]-r[0]) / int64(time.Millisecond)
	return r[0] + time.Duration(p.rng.Int64N(ms+1))*time.Millisecond
}
