package diskless

import (
	"math"
	"testing"
)

// TestPickSpreadsAndMovesLittle: over three agents, 3,000 partitions
// split about evenly; when one agent goes, only its partitions move.
func TestPickSpreadsAndMovesLittle(t *testing.T) {
	topic := [16]byte{7, 1}
	const n = 3000
	before := map[int32]int32{}
	count := map[int32]int{}
	for p := range int32(n) {
		a := Pick(topic, p, []int32{1, 2, 3})
		before[p] = a
		count[a]++
	}
	for a, c := range count {
		if math.Abs(float64(c)-n/3) > n/3*0.1 {
			t.Errorf("agent %d leads %d of %d partitions, want about %d", a, c, n, n/3)
		}
	}
	for p := range int32(n) {
		after := Pick(topic, p, []int32{1, 3})
		if before[p] != 2 && after != before[p] {
			t.Fatalf("partition %d moved from %d to %d though its agent stayed", p, before[p], after)
		}
	}
	if got := Pick(topic, 0, nil); got != -1 {
		t.Errorf("no candidates: %d, want -1", got)
	}
}
