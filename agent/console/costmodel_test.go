package console

import (
	"math"
	"testing"
	"time"
)

const mib = 1 << 20

// defaultCommit is --diskless-commit-interval 250ms and
// --diskless-commit-bytes 8MiB.
var defaultCommit = CommitSettings{IntervalSeconds: 0.25, Bytes: 8 * mib}

// TestCommitSettingsPredict: the design's table (docs/design.md §7a,
// "Cost model") at the default interval and bytes.
func TestCommitSettingsPredict(t *testing.T) {
	for _, tc := range []struct {
		c          CommitSettings
		rate       float64 // bytes a second
		perSecond  float64
		perGiB     float64
		perGiBKnow bool
	}{
		{defaultCommit, 1 * mib, 4, 4096, true},   // 256 KiB objects, every interval
		{defaultCommit, 10 * mib, 4, 409.6, true}, // 2.5 MiB objects
		{defaultCommit, 64 * mib, 8, 128, true},   // 8 MiB objects, cut by size
		{defaultCommit, 0, 0, 0, false},           // idle: no object is cut
		{CommitSettings{}, 1 * mib, 0, 0, false},  // an agent that did not report its settings
		{CommitSettings{1, mib}, 2 * mib, 2, 1024, true},
	} {
		if got := tc.c.PutsPerSecond(tc.rate); math.Abs(got-tc.perSecond) > 1e-9 {
			t.Errorf("%+v at %v MiB/s: %v PUTs/s, want %v", tc.c, tc.rate/mib, got, tc.perSecond)
		}
		got, ok := tc.c.PutsPerGiB(tc.rate)
		if ok != tc.perGiBKnow || math.Abs(got-tc.perGiB) > 1e-9 {
			t.Errorf("%+v at %v MiB/s: %v PUTs/GiB (%v), want %v (%v)", tc.c, tc.rate/mib, got, ok, tc.perGiB, tc.perGiBKnow)
		}
	}
}

// TestMonthlyPutAndCrossZoneCost: the design's table priced at the
// default prices: three agents at 4 PUTs/s each, and classic RF 3 with
// each of three agents taking 1 MiB/s, whose followers copy 6 MiB/s
// between zones (a GB is 2^30 bytes, as for storage).
func TestMonthlyPutAndCrossZoneCost(t *testing.T) {
	p := DefaultPrices()
	if got := p.MonthlyPutCost(3 * 4); math.Abs(got-155.52) > 1e-9 {
		t.Errorf("12 PUTs/s for a month: $%v, want $155.52", got)
	}
	if got := p.MonthlyCrossZoneCost(6 * mib); math.Abs(got-303.75) > 1e-9 {
		t.Errorf("6 MiB/s between zones for a month: $%v, want $303.75", got)
	}
}

// TestBuildCostModel: Build sums the agents' commit-object shares and
// follower copies into each topic's line, each agent (reporting no
// recent window here) since it started and predicting with its own
// commit settings, and adds the commit objects to the diskless topics'
// store usage.
func TestBuildCostModel(t *testing.T) {
	topics := []TopicState{{Name: "dl-a", Diskless: true}, {Name: "dl-b", Diskless: true}, {Name: "classic"}, {Name: "idle", Diskless: true}}
	locals := map[int32]*Local{
		// Agent 0 takes 1 MiB/s of dl-a and 3 MiB/s of dl-b: at the
		// defaults that predicts 4 PUTs/s, split 1:3. It measured 350
		// objects in 100 s, 50 of them dl-a's shares.
		0: {AgentID: 0, UptimeSeconds: 100, DisklessCommit: defaultCommit, Cost: CostCounters{
			Diskless:      map[string]DisklessUsage{"dl-a": {Puts: 50, Bytes: 100 * mib}, "dl-b": {Puts: 300, Bytes: 300 * mib}},
			ReplicaCopied: map[string]float64{"classic": 100 * mib}}},
		// Agent 1 takes 2 MiB/s of dl-a with a 1 s interval and 1 MiB
		// objects: 2 PUTs/s, cut by size.
		1: {AgentID: 1, UptimeSeconds: 200, DisklessCommit: CommitSettings{1, mib}, Cost: CostCounters{
			Diskless:      map[string]DisklessUsage{"dl-a": {Puts: 400, Bytes: 400 * mib}},
			ReplicaCopied: map[string]float64{"classic": 200 * mib}}},
		// Agent 2 reports no settings (an older agent) and predicts
		// nothing, but what it measured counts.
		2: {AgentID: 2, UptimeSeconds: 100, Cost: CostCounters{Diskless: map[string]DisklessUsage{"dl-b": {Puts: 100, Bytes: 100 * mib}}}},
	}
	prices := Prices{PutPer1000: 0.005, CrossZonePerGB: 0.02}
	v := Build(1, nil, topics, locals, nil, prices, nil)
	byName := map[string]Topic{}
	for _, tp := range v.Topics {
		byName[tp.Name] = tp
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	nearPtr := func(what string, got *float64, want float64) {
		t.Helper()
		if got == nil {
			t.Errorf("%s: absent, want %v", what, want)
			return
		}
		near(what, *got, want)
	}

	a := byName["dl-a"].DisklessCost
	if a == nil || byName["dl-a"].Replication != nil {
		t.Fatalf("dl-a: diskless line %+v, replication %+v; want only the diskless line", a, byName["dl-a"].Replication)
	}
	near("dl-a bytes/s", a.BytesPerSecond, 3*mib)
	near("dl-a measured PUTs/s", a.PutsPerSecond, 0.5+2)
	nearPtr("dl-a measured PUTs/GiB", a.PutsPerGiB, 450/(500.0/1024))
	near("dl-a predicted PUTs/s", a.PredictedPutsPerSecond, 1+2)
	nearPtr("dl-a predicted PUTs/GiB", a.PredictedPutsPerGiB, 3/(3.0/1024))
	near("dl-a measured PUT cost", a.MonthlyPutCost, 2.5*secondsPerMonth/1000*0.005)
	near("dl-a predicted PUT cost", a.PredictedMonthlyPutCost, 3*secondsPerMonth/1000*0.005)

	b := byName["dl-b"].DisklessCost
	near("dl-b bytes/s", b.BytesPerSecond, 3*mib+1*mib)
	near("dl-b measured PUTs/s", b.PutsPerSecond, 3+1)
	near("dl-b predicted PUTs/s", b.PredictedPutsPerSecond, 3) // agent 2 predicts nothing
	nearPtr("dl-b measured PUTs/GiB", b.PutsPerGiB, 400/(400.0/1024))

	if idle := byName["idle"].DisklessCost; idle == nil || idle.PutsPerSecond != 0 || idle.PutsPerGiB != nil || idle.PredictedPutsPerGiB != nil {
		t.Errorf("idle diskless topic: %+v, want a line of zeros without ratios", idle)
	}

	c := byName["classic"]
	if c.DisklessCost != nil || c.Replication == nil {
		t.Fatalf("classic: diskless line %+v, replication %+v; want only replication", c.DisklessCost, c.Replication)
	}
	near("classic replication bytes/s", c.Replication.BytesPerSecond, 2*mib)
	near("classic replication cost", c.Replication.MonthlyCost, 2.0*mib*secondsPerMonth/(1<<30)*0.02)

	// The commit objects are in the diskless topics' store usage, and so
	// in their monthly request cost.
	if u := byName["dl-a"].Usage; u.Puts != 450 || u.BytesWritten != 500*mib {
		t.Errorf("dl-a store usage %+v, want its 450 PUT shares and 500 MiB", u)
	}
	near("dl-a request cost", byName["dl-a"].MonthlyCost.Requests, a.MonthlyPutCost)

	s := v.Store
	near("total measured PUTs/s", s.Diskless.PutsPerSecond, 2.5+4)
	near("total predicted PUTs/s", s.Diskless.PredictedPutsPerSecond, 4+2)
	nearPtr("total measured PUTs/GiB", s.Diskless.PutsPerGiB, 850/(900.0/1024))
	near("total replication", s.Replication.BytesPerSecond, 2*mib)
	near("total replication cost", s.Replication.MonthlyCost, c.Replication.MonthlyCost)
	// A diskless partition has no leader or replicas, and is not
	// leaderless.
	dlA := TopicState{Name: "dl-a", Diskless: true, Partitions: []PartitionState{{Index: 0}}}
	if w := Build(1, nil, []TopicState{dlA}, nil, nil, prices, nil); w.Counts.Leaderless != 0 || w.Counts.Partitions != 1 ||
		w.Topics[0].Partitions[0].Leader != -1 || w.Topics[0].Partitions[0].Replicas == nil || w.Topics[0].Partitions[0].ISR == nil {
		t.Errorf("a diskless partition shows as %+v, counts %+v; want no leader, empty replicas and ISR", w.Topics[0].Partitions, w.Counts)
	}
	if v.DisklessCommit != (CommitSettings{1, mib}) {
		t.Errorf("the view's commit settings %+v, want the serving agent 1's", v.DisklessCommit)
	}
}

// TestRecentPredictsSlotBySlot: an agent's recent window predicts each
// slot at that slot's rate, so a burst is predicted as a burst, and the
// window's counters are what they gained.
func TestRecentPredictsSlotBySlot(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	snap := func(second int, a, b, copied float64) CostSnapshot {
		return CostSnapshot{At: at.Add(time.Duration(second) * time.Second), CostCounters: CostCounters{
			Diskless:      map[string]DisklessUsage{"a": {Puts: a / (256 << 10), Bytes: a}, "b": {Bytes: b}},
			ReplicaCopied: map[string]float64{"c": copied}}}
	}
	// Idle for 10 s, then 5 s at 64 MiB/s (48 of a, 16 of b a second),
	// then idle for 45 s: 8 PUTs/s for 5 s, split 3:1, and none else.
	snaps := []CostSnapshot{snap(0, 0, 0, 0), snap(5, 0, 0, 0), snap(10, 0, 0, 0), snap(15, 240*mib, 80*mib, 10), snap(60, 240*mib, 80*mib, 70)}
	r := defaultCommit.Recent(snaps)
	if r == nil || r.Seconds != 60 {
		t.Fatalf("recent %+v, want a 60 s window", r)
	}
	if a, b := r.PredictedPuts["a"], r.PredictedPuts["b"]; math.Abs(a-30) > 1e-9 || math.Abs(b-10) > 1e-9 {
		t.Errorf("predicted PUTs a %v, b %v; want 30 and 10 (8 a second for 5 s)", a, b)
	}
	if u := r.Counters.Diskless["a"]; u.Bytes != 240*mib || u.Puts != 960 || r.Counters.ReplicaCopied["c"] != 70 {
		t.Errorf("window counters %+v", r.Counters)
	}
	// The minute's mean rate, 5.3 MiB/s, would have predicted 4 PUTs/s
	// all minute: 240.
	if mean := defaultCommit.PutsPerSecond(320*mib/60) * 60; mean != 240 {
		t.Fatalf("the mean-rate prediction is %v", mean)
	}

	if defaultCommit.Recent(snaps[:1]) != nil || defaultCommit.Recent([]CostSnapshot{snaps[0], snaps[0]}) != nil {
		t.Error("a window of one snapshot, or of no time, predicts something")
	}

	// Build takes the window over the agent's uptime.
	locals := map[int32]*Local{0: {UptimeSeconds: 3600, DisklessCommit: defaultCommit, RecentCost: r,
		Cost: CostCounters{Diskless: map[string]DisklessUsage{"a": {Puts: 1, Bytes: 1}}}}}
	v := Build(0, nil, []TopicState{{Name: "a", Diskless: true}, {Name: "c"}}, locals, nil, DefaultPrices(), nil)
	a, c := v.Topics[0].DisklessCost, v.Topics[1].Replication
	if math.Abs(a.PredictedPutsPerSecond-0.5) > 1e-9 || math.Abs(a.PutsPerSecond-16) > 1e-9 || math.Abs(a.BytesPerSecond-4*mib) > 1e-6 {
		t.Errorf("a's line %+v, want 0.5 predicted and 16 measured PUTs/s, 4 MiB/s", a)
	}
	if math.Abs(c.BytesPerSecond-70.0/60) > 1e-9 {
		t.Errorf("c's replication %v bytes/s, want 70 in 60 s", c.BytesPerSecond)
	}
}
