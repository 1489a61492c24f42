package metadata

import (
	"fmt"
	"slices"
)

// maxAllocatePartitions bounds AllocateAssignment's output, which is sized
// by its arguments, so a hostile partition count cannot allocate gigabytes.
// Store.CreateTopic applies the (lower) Settings.MaxPartitions on top.
const maxAllocatePartitions = 1 << 20

// AllocateAssignment places replicationFactor replicas of each partition on
// distinct agents, round-robin: replica r of partition p goes to
// agents[(startIndex+p+r) mod len(agents)]. Leaders (replica 0) therefore
// spread evenly, and startIndex (for instance a random number) keeps
// successive topics from all starting on the same agent. It is the simple
// placement for topic creation; rack awareness and balancing live in the
// placement package. agents must be distinct; their order is kept.
func AllocateAssignment(partitions int32, replicationFactor int16, agents []int32, startIndex int) ([][]int32, error) {
	if partitions < 1 || partitions > maxAllocatePartitions {
		return nil, fmt.Errorf("%w: %d partitions; must be 1 to %d", ErrInvalidPartitions, partitions, maxAllocatePartitions)
	}
	n := len(agents)
	if replicationFactor < 1 || int(replicationFactor) > n {
		return nil, fmt.Errorf("%w: replication factor %d with %d available agents",
			ErrInvalidReplicationFactor, replicationFactor, n)
	}
	for i, a := range agents {
		if a < 0 || slices.Contains(agents[:i], a) {
			return nil, fmt.Errorf("%w: agent list %v: negative or repeated agent %d", ErrInvalidReplicaAssignment, agents, a)
		}
	}
	start := startIndex % n
	if start < 0 {
		start += n
	}
	rf := int(replicationFactor)
	flat := make([]int32, int(partitions)*rf) // one allocation for all lists
	out := make([][]int32, partitions)
	for p := range int(partitions) {
		replicas := flat[p*rf : (p+1)*rf : (p+1)*rf]
		for r := range rf {
			replicas[r] = agents[(start+p+r)%n]
		}
		out[p] = replicas
	}
	return out, nil
}
