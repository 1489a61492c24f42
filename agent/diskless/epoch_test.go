package diskless

import (
	"context"
	"errors"
	"testing"

	"github.com/strata-streaming/strata/agent/batchcoord"
)

// epochHost is a Host whose view of the coordinators' partitions is one
// epoch, or none (an error) when epoch is negative.
type epochHost struct {
	Host
	epoch int32
}

func (h *epochHost) CoordinatorEpoch(context.Context, [16]byte, int32) (int32, error) {
	if h.epoch < 0 {
		return 0, errors.New("fake: __diskless_state is not open")
	}
	return h.epoch, nil
}

// TestLeaderEpochIsTheCoordinators: the epoch Metadata shows for a
// diskless partition is the one its own coordinator answered with, and it
// never goes back on this agent. The index follower of a coordinator agent
// polls every partition that agent coordinates with the Coord of one of
// them, whose partitions of __diskless_state may be at other epochs; a
// client that saw the higher epoch refuses the lower one (KIP-320) and
// keeps producing to the agent it had, dead or not. This agent's view of
// the coordinator partition's state counts too: it moves at an election,
// before any answer at the new epoch.
func TestLeaderEpochIsTheCoordinators(t *testing.T) {
	host := &epochHost{epoch: -1}
	s := &Service{views: map[batchcoord.PartitionKey]*view{}, host: host}
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
	// This agent's view of the coordinator partition's state moved to
	// epoch 7 (another agent took it over after a death) before any
	// commit or poll was answered at 7: Metadata says 7 at once, as the
	// agent that took over does.
	host.epoch = 7
	if got := p.LeaderEpoch(); got != 7 {
		t.Fatalf("after the state moved to epoch 7: LeaderEpoch %d, want 7", got)
	}
	// A view behind what was answered moves nothing back either.
	host.epoch = 3
	if got := p.LeaderEpoch(); got != 6 {
		t.Fatalf("with a view at epoch 3: LeaderEpoch %d, want 6", got)
	}
}
