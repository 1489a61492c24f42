package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAgentsFindEachOtherByGossip: three agents sharing a store, the
// second and third joining the first by --join, each list all three in
// Metadata with their advertised addresses; one that stops leaves the
// others' lists.
func TestAgentsFindEachOtherByGossip(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "store")
	var agents []*running
	for i := range 3 {
		cfg := testConfig(filepath.Join(dir, fmt.Sprint("agent", i)))
		cfg.Store = store
		if i > 0 {
			cfg.Gossip.Join = []string{agents[0].members.Self().GossipAddr}
		}
		agents = append(agents, start(t, cfg, nil))
	}
	waitBrokers := func(a *running, want []int32) {
		t.Helper()
		cl := a.client(t)
		deadline := time.Now().Add(20 * time.Second)
		var got []int32
		for time.Now().Before(deadline) {
			// A raw request to this agent: clients cache metadata.
			m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t), cl)
			if err == nil {
				got = got[:0]
				for _, b := range m.Brokers {
					got = append(got, b.NodeID)
					if fmt.Sprintf("%s:%d", b.Host, b.Port) != agents[b.NodeID].advertisedAddr() {
						t.Fatalf("agent %d listed at %s:%d, it advertises %s", b.NodeID, b.Host, b.Port, agents[b.NodeID].advertisedAddr())
					}
				}
				slices.Sort(got)
				if slices.Equal(got, want) {
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("agent %d lists brokers %v, want %v", a.id, got, want)
	}
	for _, a := range agents {
		if a.id != int32(slices.Index(agents, a)) {
			t.Fatalf("agent ids %d: want 0, 1, 2 in start order", a.id)
		}
		waitBrokers(a, []int32{0, 1, 2})
	}
	agents[2].stop(t)
	waitBrokers(agents[0], []int32{0, 1})
	waitBrokers(agents[1], []int32{0, 1})
}
