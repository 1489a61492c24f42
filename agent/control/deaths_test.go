package control

import (
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/membership"
)

// TestDeathEvidence: a refused dial counts an agent gossip still lists as
// dead for elections, also during the grace after start, until it is
// heard from or the evidence expires; a lost fetch link only makes it
// seem dead to Metadata.
func TestDeathEvidence(t *testing.T) {
	t0 := time.Now()
	host := &fakeHost{topic: &dataplane.Topic{Name: "t"}}
	c := New(9, Config{}, nil, host, nil, prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)), t0)
	c.SetMembers(&fakeMembers{others: []membership.Member{{ID: 1}, {ID: 2}}})
	live := func(now time.Time) []int32 {
		m := c.liveAgents(now)
		if m == nil {
			return nil
		}
		return slices.Sorted(maps.Keys(m))
	}
	inGrace, after := t0.Add(time.Second), t0.Add(electionGrace+time.Second)

	if got := live(inGrace); got != nil {
		t.Fatalf("in the grace with no evidence: %v, want nil (no elections)", got)
	}
	if got := live(after); !slices.Equal(got, []int32{1, 2, 9}) {
		t.Fatalf("gossip's view: %v", got)
	}

	// A lost link is not enough for an election, only for Metadata.
	c.deaths.mark(&c.deaths.linkLost, 1, after)
	if got := live(after); !slices.Equal(got, []int32{1, 2, 9}) {
		t.Fatalf("after 1's link was lost: %v, want [1 2 9]", got)
	}
	if !c.deaths.gone(1, after) || c.deaths.gone(2, after) {
		t.Fatal("Metadata's view: want 1 gone, 2 not")
	}

	c.deaths.mark(&c.deaths.refused, 2, inGrace)
	if got := live(inGrace); !slices.Equal(got, []int32{9}) {
		t.Fatalf("in the grace after 2 refused: %v, want [9] (the fake's partitions name no one)", got)
	}
	if got := live(after); !slices.Equal(got, []int32{1, 9}) {
		t.Fatalf("after 2 refused: %v, want [1 9]", got)
	}
	if got := live(inGrace.Add(deathEvidenceFor)); !slices.Equal(got, []int32{1, 2, 9}) {
		t.Fatalf("once the evidence expired: %v, want [1 2 9]", got)
	}
	c.LeaderReached(2)
	if got := live(after); !slices.Equal(got, []int32{1, 2, 9}) {
		t.Fatalf("after 2 answered: %v, want [1 2 9]", got)
	}
	c.MemberJoined(1)
	if c.deaths.gone(1, after) {
		t.Fatal("1 joined gossip again and still seems gone")
	}
}
