package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/console"
)

// consolePagesServer is agent 1's server with a gathering in its gate that
// it keeps for the test: 150 topics (orders.000 ... orders.149, every
// fifth named pay_...), __consumer_offsets, groups "billing" and "a/b c"
// and "x/../records", and agents 1 and 2. groupsErr, when set, is why the
// groups could not be listed.
func consolePagesServer(t *testing.T, cfg Config, groupsErr error) *Server {
	t.Helper()
	var topics []console.TopicState
	for i := range 150 {
		name := fmt.Sprintf("orders.%03d", i)
		if i%5 == 0 {
			name = fmt.Sprintf("pay_%03d", i)
		}
		topics = append(topics, console.TopicState{Name: name, Partitions: []console.PartitionState{
			{Index: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}}})
	}
	topics = append(topics, console.TopicState{Name: "__consumer_offsets", Internal: true,
		Partitions: []console.PartitionState{{Index: 0, Leader: 2, Replicas: []int32{2}, ISR: []int32{2}}}})
	groups := []console.Group{{Name: "a/b c", Coordinator: 2}, {Name: "billing", State: "Stable", Coordinator: 1,
		Lag: []console.GroupPartition{{Topic: "orders.001", Partition: 0, Lag: 4}}}, {Name: "x/../records", Coordinator: 1}}
	if groupsErr != nil {
		groups = nil
	}
	view := console.Build(1, []console.AgentInfo{{ID: 1, State: "active"}, {ID: 2, State: "active"}}, topics, nil, groups, console.Prices{}, nil)
	s := newTestServer(t, cfg, prometheus.NewRegistry())
	s.console.last, s.console.at, s.console.reuse = &consoleGathering{view: view, groupsErr: groupsErr}, time.Now(), time.Hour
	return s
}

// TestConsoleViewParameters: GET /v1/console answers the window its
// parameters ask for, 100 topics and 100 groups by default, with the
// counts a page needs; a bad parameter is a 400 naming it.
func TestConsoleViewParameters(t *testing.T) {
	h := consolePagesServer(t, Config{}, nil).routes()
	for _, c := range []struct {
		query   string
		status  int
		want    string // for a 200: first topic, last topic, listed topics, matched; groups listed, matched
		mention string // for an error: what its message names
	}{
		{query: "", status: 200, want: "__consumer_offsets orders.123 100 151; 3 3"},
		{query: "topics_offset=100", status: 200, want: "orders.124 pay_145 51 151; 3 3"},
		{query: "internal=false&topics_limit=1000", status: 200, want: "orders.001 pay_145 150 150; 3 3"},
		{query: "q=PAY_&topics_limit=5&topics_offset=25", status: 200, want: "pay_125 pay_145 5 30; 0 0"},
		{query: "q=b&groups_limit=1&groups_offset=1", status: 200, want: "- - 0 0; 1 2"},
		{query: "topics_offset=500", status: 200, want: "- - 0 151; 3 3"},
		{query: "topics_limit=0", status: 400, mention: "topics_limit: "},
		{query: "topics_limit=1001", status: 400, mention: "topics_limit: "},
		{query: "topics_offset=-1", status: 400, mention: "topics_offset: "},
		{query: "groups_limit=many", status: 400, mention: "groups_limit: "},
		{query: "groups_offset=1e3", status: 400, mention: "groups_offset: "},
		{query: "internal=yes", status: 400, mention: "internal: "},
		{query: "q=" + strings.Repeat("q", console.MaxQueryBytes+1), status: 400, mention: "q: "},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/console?"+c.query, nil))
		if w.Code != c.status || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%q: %d %s, want %d JSON", c.query, w.Code, w.Header().Get("Content-Type"), c.status)
			continue
		}
		if c.status != 200 {
			var body struct{ Error string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || !strings.HasPrefix(body.Error, c.mention) {
				t.Errorf("%q: error %q (%v), want one starting %q", c.query, body.Error, err, c.mention)
			}
			continue
		}
		var v console.View
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%q: %v", c.query, err)
		}
		first, last := "-", "-"
		if n := len(v.Topics); n > 0 {
			first, last = v.Topics[0].Name, v.Topics[n-1].Name
		}
		got := fmt.Sprintf("%s %s %d %d; %d %d", first, last, len(v.Topics), v.Listed.Topics.Matched, len(v.Groups), v.Listed.Groups.Matched)
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.query, got, c.want)
		}
		if v.Counts.Topics != 151 || v.Counts.Groups != 3 || v.Counts.Agents != 2 {
			t.Errorf("%q: counts %+v, want the whole cluster's", c.query, v.Counts)
		}
	}
}

// TestConsoleDetails: a topic's, group's and agent's JSON and page, found
// by their path-escaped names; an unknown one is a 404 naming it, an
// agent id that is no number a 400, and a group the agent could not list
// a 502 rather than a 404.
func TestConsoleDetails(t *testing.T) {
	h := consolePagesServer(t, Config{}, nil).routes()
	for _, c := range []struct {
		path   string
		status int
		want   string // what the body holds
	}{
		{"/v1/console/topics/orders.001", 200, `"topic":{"name":"orders.001"`},
		{"/v1/console/topics/orders.001", 200, `"groups":[{"name":"billing","state":"Stable","partitions":1,"lag":4}]`},
		{"/v1/console/topics/pay_005", 200, `"name":"pay_005"`},
		{"/v1/console/topics/__consumer_offsets", 200, `"internal":true`},
		{"/v1/console/topics/orders", 404, `topic \"orders\" not found`},
		{"/v1/console/groups/billing", 200, `"group":{"name":"billing"`},
		{"/v1/console/groups/a%2Fb%20c", 200, `"group":{"name":"a/b c"`},
		{"/v1/console/groups/x%2F..%2Frecords", 200, `"group":{"name":"x/../records"`},
		{"/v1/console/groups/bill", 404, `group \"bill\" not found`},
		{"/v1/console/agents/1", 200, `"agent":{"id":1`},
		{"/v1/console/agents/2", 200, `"coordinates":["a/b c"]`},
		{"/v1/console/agents/7", 404, `agent 7 not found`},
		{"/v1/console/agents/one", 400, `agent id \"one\"`},
		{"/v1/console/agents/-1", 400, `agent id \"-1\"`},
		{"/console/topics/orders.001", 200, `<script src="../detail.js">`},
		{"/console/groups/x%2F..%2Frecords", 200, `<script src="../detail.js">`},
		{"/console/agents/2", 200, `<script src="../detail.js">`},
		{"/console/topics/", 404, ``},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %.300s, want %d with %s", c.path, w.Code, w.Body, c.status, c.want)
		}
		if strings.HasPrefix(c.path, "/console/") && c.status == 200 &&
			(w.Header().Get("Content-Security-Policy") != "default-src 'self'" || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html")) {
			t.Errorf("%s: served as %q with CSP %q", c.path, w.Header().Get("Content-Type"), w.Header().Get("Content-Security-Policy"))
		}
	}

	h = consolePagesServer(t, Config{}, fmt.Errorf("no coordinator")).routes()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/console/groups/billing", nil))
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "could not be listed: no coordinator") {
		t.Errorf("a group while the groups cannot be listed: %d %s, want 502 saying why", w.Code, w.Body)
	}
}

// TestConsoleDetailsGuarded: the pages and JSON of one item are reads
// of the "pages" group: with --http-require-auth-for pages they need the
// token, as /v1/console does; without it they are open.
func TestConsoleDetailsGuarded(t *testing.T) {
	const token = "cGFnZXMtdGVzdC10b2tlbi1mb3ItdGhlLWd1YXJkLW9mLWRldGFpbHM"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, restrict := range []bool{true, false} {
		cfg := Config{TokenFile: file}
		if restrict {
			cfg.RequireAuthFor = []string{"pages"}
		}
		s := consolePagesServer(t, cfg, nil)
		h := s.newHTTPGuard().wrap(s.routes())
		for _, path := range []string{"/v1/console?q=pay", "/v1/console/topics/pay_005", "/v1/console/groups/a%2Fb%20c",
			"/v1/console/agents/1", "/console/topics/pay_005", "/console/groups/billing", "/console/agents/1"} {
			for _, bearer := range []string{"", token} {
				r := httptest.NewRequest("GET", path, nil)
				if bearer != "" {
					r.Header.Set("Authorization", "Bearer "+bearer)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				want := http.StatusOK
				if restrict && bearer == "" {
					want = http.StatusUnauthorized
				}
				if w.Code != want {
					t.Errorf("pages restricted %v, %s, token %v: %d, want %d", restrict, path, bearer != "", w.Code, want)
				}
			}
		}
	}
}

// TestConsoleGateReuses: requests within the reuse window share one
// gathering; after it, the next request gathers anew.
func TestConsoleGateReuses(t *testing.T) {
	g := consoleGate{reuse: time.Hour}
	gathers := 0
	gather := func(context.Context) *consoleGathering { gathers++; return &consoleGathering{} }
	for range 3 {
		if _, err := g.get(context.Background(), gather); err != nil {
			t.Fatal(err)
		}
	}
	if gathers != 1 {
		t.Errorf("3 requests within the window gathered %d times, want 1", gathers)
	}
	g.reuse = time.Nanosecond
	time.Sleep(time.Millisecond) // past a nanosecond's window, not synchronisation
	g.get(context.Background(), gather)
	if gathers != 2 {
		t.Errorf("a request after the window gathered %d times in all, want 2", gathers)
	}
}
