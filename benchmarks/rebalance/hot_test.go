package rebalance

import (
	"strings"
	"testing"
)

// TestHotTable: a row per mode, agents in id order, and a placement that
// changed while the load was read is marked.
func TestHotTable(t *testing.T) {
	rs := []HotResult{
		{Mode: "load", Load: map[int32]float64{1: 2 << 20, 0: 1 << 20}, Ratio: 2, PlannedRatio: 1.5,
			Replicas: map[int32]int{0: 3, 1: 4}, Leaders: map[int32]int{0: 1, 1: 2}, MovesStarted: 3, LeadershipMoves: 2},
		{Mode: "count", Load: map[int32]float64{0: 1 << 20, 1: 1 << 20}, Ratio: 1, Moved: true},
	}
	got := HotTable(rs)
	for _, want := range []string{
		"| load | 1.00, 2.00 | 2.00 | 1.50 | 3, 4 | 1, 2 |",
		"| count | 1.00, 1.00 | 1.00 (moved while read) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if r := maxOverMin(map[int32]float64{0: 2, 1: 3, 2: 6}); r != 3 {
		t.Errorf("maxOverMin = %v, want 3", r)
	}
}

func TestHotConfigValidate(t *testing.T) {
	if err := DefaultHotConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	c := DefaultHotConfig()
	c.Mode = "weight"
	if c.Validate() == nil {
		t.Error("mode weight accepted")
	}
}
