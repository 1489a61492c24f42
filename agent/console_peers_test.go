package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/agent/console/history"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/membership"
)

// TestConsoleFetchesOnlyRegisteredAddresses: the console gathers the report
// of a real second agent, but not from gossip members that advertise an
// HTTP address the store does not vouch for: one whose id is registered
// with another address, and one whose id is not registered at all. Each
// stands in front of a server that would answer with a valid report; it
// must receive no request, and the view must say why each is missing.
func TestConsoleFetchesOnlyRegisteredAddresses(t *testing.T) {
	c := startCluster(t, 2)
	a := c.agents[0]
	var hits atomic.Int64
	fake := func(id int32) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(&console.Local{AgentID: id, Partitions: []console.LocalPartition{}})
		}))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	// Agent 5 is registered, at another HTTP address than it gossips.
	if err := a.store.ClaimAgent(ctxT(t), 5, metadata.AgentInfo{KafkaAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{5, 6} {
		cfg := membership.LoopbackConfig()
		cfg.Join = []string{a.members.Self().GossipAddr}
		cfg.Label = "strata/" + a.clusterID // anyone who can reach the gossip port can learn it
		cfg.Logger = quiet
		m, err := membership.Start(cfg, membership.Member{ID: id, KafkaAddr: "127.0.0.1:1", HTTPAddr: fake(id), State: membership.StateJoining})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
	}
	// The console lists agent 0, and every other member gossip shows.
	testwait.Until(t, 20*time.Second, func() bool {
		agents := 1
		for _, m := range a.members.Members() {
			if m.ID != a.id {
				agents++
			}
		}
		return agents == 4
	}, "agent 0 to see the two impostors")

	resp, err := http.Get("http://" + a.HTTPAddr().String() + "/v1/console")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v console.View
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the console fetched %d reports from addresses only gossip advertised", n)
	}
	want := map[string]string{"agent 5:": "not the one registered", "agent 6:": "not registered in the store"}
	for _, e := range v.Errors {
		if strings.HasPrefix(e, "agent 1:") {
			t.Errorf("the real agent 1 was not gathered: %s", e)
		}
		for prefix, why := range want {
			if strings.HasPrefix(e, prefix) && strings.Contains(e, why) {
				delete(want, prefix)
			}
		}
	}
	for prefix, why := range want {
		t.Errorf("view errors %q lack %s ... %s", v.Errors, prefix, why)
	}

	// The charts' history is gathered under the same rule.
	resp, err = http.Get("http://" + a.HTTPAddr().String() + "/v1/console/history")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ = io.ReadAll(resp.Body)
	var h history.View
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the history was fetched %d times from addresses only gossip advertised", n)
	}
	var ids []int32
	for _, as := range h.Agents {
		ids = append(ids, as.ID)
	}
	if !slices.Equal(ids, []int32{0, 1}) {
		t.Errorf("history of agents %v, want 0 and 1; errors %q", ids, h.Errors)
	}
	want = map[string]string{"agent 5:": "not the one registered", "agent 6:": "not registered in the store"}
	for _, e := range h.Errors {
		for prefix, why := range want {
			if strings.HasPrefix(e, prefix) && strings.Contains(e, why) {
				delete(want, prefix)
			}
		}
	}
	for prefix, why := range want {
		t.Errorf("history errors %q lack %s ... %s", h.Errors, prefix, why)
	}
}
