package diskless

import (
	"testing"

	"github.com/strata-streaming/strata/agent/batchcoord"
)

// TestLeaderEpochIsTheCoordinators: the epoch Metadata shows for a
// diskless partition is the one its own coordinator answered with, and it
// never goes back on this agent. The index follower of a coordinator agent
// polls every partition that agent coordinates with the Coord of one of
// them, whose partitions of __diskless_state may be at other epochs; a
// client that saw the higher epoch refuses the lower one (KIP-320) and
// keeps producing to the agent it had, dead or not.
func TestLeaderEpochIsTheCoordinators(t *testing.T) {
	s := &Service{views: map[batchcoord.PartitionKey]*view{}}
	p := s.Partition("a", topicA, 0)
	// A commit answered by the coordinator at epoch 5.
	s.learn(p.key, Coord{Agent: 1, Addr: "a1", Epoch: 5}, batchcoord.View{Epoch: 5})
	if got := p.LeaderEpoch(); got != 5 {
		t.Fatalf("after a commit at epoch 5: LeaderEpoch %d", got)
	}
	// The follower of agent 1 polls it with the Coord of another
	// partition, whose coordinator partition is at epoch 2; the answer
	// carries this partition's coordinator epoch, 5.
	s.learn(p.key, Coord{Agent: 1, Addr: "a1", Epoch: 2}, batchcoord.View{Epoch: 5})
	if got := p.LeaderEpoch(); got != 5 {
		t.Fatalf("after the follower's poll with another partition's Coord: LeaderEpoch %d, want 5", got)
	}
	// An answer overtaken by a newer one moves nothing back.
	s.learn(p.key, Coord{Agent: 2, Addr: "a2", Epoch: 6}, batchcoord.View{Epoch: 6})
	s.learn(p.key, Coord{Agent: 1, Addr: "a1", Epoch: 5}, batchcoord.View{Epoch: 5})
	if got := p.LeaderEpoch(); got != 6 {
		t.Fatalf("after epoch 6 then a late answer of epoch 5: LeaderEpoch %d, want 6", got)
	}
}
