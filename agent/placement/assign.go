package placement

import (
	"fmt"
	"slices"

	"github.com/strata-streaming/strata/agent/metadata"
)

// maxAssignPartitions bounds Assign's output, which is sized
// by its arguments, so a hostile partition count cannot allocate gigabytes.
// Store.CreateTopic applies the (lower) Settings.MaxPartitions on top.
const maxAssignPartitions = 1 << 20

// Assign places replicationFactor replicas of each partition on
// distinct agents, round-robin: replica r of partition p goes to
// agents[(startIndex+p+r) mod len(agents)]. Leaders (replica 0) therefore
// spread evenly, and startIndex (for instance a random number) keeps
// successive topics from all starting on the same agent. It is the simple
// placement for topic creation; rack awareness comes from the order of
// agents (Order), and balancing is Place's. agents must be distinct; their
// order is kept.
func Assign(partitions int32, replicationFactor int16, agents []int32, startIndex int) ([][]int32, error) {
	if partitions < 1 || partitions > maxAssignPartitions {
		return nil, fmt.Errorf("%w: %d partitions; must be 1 to %d", metadata.ErrInvalidPartitions, partitions, maxAssignPartitions)
	}
	n := len(agents)
	if replicationFactor < 1 || int(replicationFactor) > n {
		return nil, fmt.Errorf("%w: replication factor %d with %d available agents",
			metadata.ErrInvalidReplicationFactor, replicationFactor, n)
	}
	for i, a := range agents {
		if a < 0 || slices.Contains(agents[:i], a) {
			return nil, fmt.Errorf("%w: agent list %v: negative or repeated agent %d", metadata.ErrInvalidReplicaAssignment, agents, a)
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
