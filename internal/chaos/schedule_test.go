package chaos

import (
	"slices"
	"testing"
	"time"
)

func plan(seed uint64, kinds []FaultKind, n int) []Fault {
	p := NewPlanner(seed, kinds, DefaultTimings())
	out := make([]Fault, n)
	for i := range out {
		out[i] = p.Next()
	}
	return out
}

func TestPlanRepeatsFromSeed(t *testing.T) {
	a, b := plan(42, AllFaults, 50), plan(42, AllFaults, 50)
	if !slices.Equal(a, b) {
		t.Fatal("two plans from seed 42 differ")
	}
	if c := plan(43, AllFaults, 50); slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 give the same plan")
	}
}

// The network faults need the namespaces, and a store cut a store behind
// the network.
func TestConfigNetworkFaults(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Faults = []FaultKind{FaultNetCut}
	if err := cfg.Validate(); err == nil {
		t.Error("netcut without Network validated")
	}
	cfg.Network = true
	if err := cfg.Validate(); err != nil {
		t.Errorf("netcut with Network: %v", err)
	}
	cfg.Faults, cfg.Store = []FaultKind{FaultStoreCut}, StoreFile
	if err := cfg.Validate(); err == nil {
		t.Error("storecut on a file store validated")
	}
	cfg.Faults = []FaultKind{FaultDiskFull}
	if err := cfg.Validate(); err == nil {
		t.Error("diskfull without DiskBytes validated")
	}
}

func TestPlanDealsEveryKind(t *testing.T) {
	for seed := range uint64(20) {
		faults := plan(seed, AllFaults, 2*len(AllFaults))
		for deck := range 2 {
			var kinds []FaultKind
			for _, f := range faults[deck*len(AllFaults) : (deck+1)*len(AllFaults)] {
				kinds = append(kinds, f.Kind)
			}
			slices.Sort(kinds)
			want := slices.Sorted(slices.Values(AllFaults))
			if !slices.Equal(kinds, want) {
				t.Fatalf("seed %d, deck %d: kinds %v, want each of %v once", seed, deck, kinds, want)
			}
		}
	}
}

// The timings bound every duration, and the pauses outlast failure
// detection (about 2 s with clusterArgs) and the replica lag limit (3 s)
// while the stalls outlast neither: what the fault kinds are for.
func TestPlanWithinTimings(t *testing.T) {
	tm := DefaultTimings()
	in := func(d time.Duration, r [2]time.Duration) bool { return d >= r[0] && d <= r[1] }
	if tm.PauseHold[0] <= 3*time.Second || tm.Stall[1] >= time.Second || tm.WipeHold[0] >= 2*time.Second {
		t.Fatalf("default timings %+v: pauses must outlast 3 s, stalls stay under 1 s, some wipes return before failure detection", tm)
	}
	if tm.CutHold[0] <= 3*time.Second {
		t.Fatalf("default timings %+v: cuts must outlast failure detection and the lag limit", tm)
	}
	storeModes := map[[3]bool]bool{}
	cutModes := map[bool]bool{}
	for _, f := range plan(7, AllFaults, 400) {
		if !in(f.Gap, tm.Gap) {
			t.Errorf("%v: gap %v outside %v", f, f.Gap, tm.Gap)
		}
		switch f.Kind {
		case FaultKill, FaultDrain:
			if !in(f.Hold, tm.KillHold) {
				t.Errorf("%v: hold outside %v", f, tm.KillHold)
			}
		case FaultWipe:
			if !in(f.Hold, tm.WipeHold) {
				t.Errorf("%v: hold outside %v", f, tm.WipeHold)
			}
		case FaultPause:
			if !in(f.Hold, tm.PauseHold) {
				t.Errorf("%v: hold outside %v", f, tm.PauseHold)
			}
		case FaultStallKill:
			if !f.Leader || !in(f.Stall, tm.Stall) || !in(f.Hold, tm.KillHold) {
				t.Errorf("%v: not a leader, or stall/hold outside %v/%v", f, tm.Stall, tm.KillHold)
			}
		case FaultStore:
			s := f.Store
			if !in(f.Hold, tm.StoreHold) || s.SlowDown < 0 || s.Reset < 0 || s.SlowDown+s.Reset > 1 || s.MaxLatency < s.MinLatency || s.MaxLatency > time.Second {
				t.Errorf("%v: bad store fault", f)
			}
			if s == (StoreFault{}) {
				t.Errorf("%v: a store fault that does nothing", f)
			}
			storeModes[[3]bool{s.SlowDown > 0, s.Reset > 0, s.MaxLatency > 0}] = true
		case FaultStoreFail:
			if !in(f.Hold, tm.StoreHold) || f.Store.ServerError <= 0 || f.Store.HalfPut <= 0 || f.Store.ServerError+f.Store.HalfPut > 1 {
				t.Errorf("%v: bad storefail fault", f)
			}
		case FaultNetCut, FaultStoreCut, FaultDiskFull:
			if !in(f.Hold, tm.CutHold) {
				t.Errorf("%v: hold outside %v", f, tm.CutHold)
			}
			if f.Kind == FaultNetCut {
				cutModes[f.Partial] = true
			}
		}
	}
	if len(cutModes) != 2 {
		t.Errorf("netcut modes seen %v, want whole and partial cuts", cutModes)
	}
	if len(storeModes) != 4 {
		t.Errorf("store modes seen %v, want slowdown, reset, latency and all three", storeModes)
	}
}
