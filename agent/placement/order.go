package placement

import (
	"maps"
	"slices"
)

// Order lists agents so that neighbours sit in different racks
// where racks allow, as Kafka's rack-aware assignment does: racks in name
// order, agents by id within a rack, then one agent from each rack in
// turn. The round-robin of Assign places a
// partition's replicas on neighbours, so they land in distinct racks
// whenever there are at least as many racks as replicas. Agents without a
// rack form one rack of their own (with no racks set, the order is by id).
func Order(agents []Agent) []int32 {
	byRack := map[string][]int32{}
	seen := map[int32]bool{}
	for _, a := range agents {
		if seen[a.ID] {
			continue
		}
		seen[a.ID] = true
		byRack[a.Rack] = append(byRack[a.Rack], a.ID)
	}
	racks := slices.Sorted(maps.Keys(byRack))
	for _, r := range racks {
		slices.Sort(byRack[r])
	}
	var out []int32
	for i := 0; len(out) < len(seen); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}
