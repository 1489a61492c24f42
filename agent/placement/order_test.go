package placement

import (
	"slices"
	"testing"
)

// TestOrder: neighbours in the placement order sit in different
// racks when racks allow, so round-robin replica sets span racks.
func TestOrder(t *testing.T) {
	agents := []Agent{
		{ID: 5, Rack: "b"}, {ID: 1, Rack: "a"}, {ID: 2, Rack: "a"},
		{ID: 3, Rack: "b"}, {ID: 4, Rack: "c"}, {ID: 1, Rack: "a"},
	}
	got := Order(agents)
	if want := []int32{1, 3, 4, 2, 5}; !slices.Equal(got, want) {
		t.Fatalf("Order = %v, want %v", got, want)
	}
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 5: "b", 4: "c"}
	assignment, err := Assign(10, 3, got, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Five agents in three uneven racks: a window of three neighbours
	// spans all three racks except where the order wraps (2, 5, 1 and
	// 5, 1, 3), and never sits in one rack.
	spanning := 0
	for p, replicas := range assignment {
		seen := map[string]bool{}
		for _, r := range replicas {
			seen[racks[r]] = true
		}
		if len(seen) < 2 {
			t.Errorf("partition %d: replicas %v all in one rack", p, replicas)
		}
		if len(seen) == 3 {
			spanning++
		}
	}
	if spanning != 6 {
		t.Errorf("%d of 10 partitions span three racks, want 6", spanning)
	}
	if got := Order([]Agent{{ID: 2}, {ID: 0}, {ID: 1}}); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Errorf("without racks: %v, want by id", got)
	}
}
