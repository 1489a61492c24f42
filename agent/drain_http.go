package agent

// The drain endpoint (docs/design.md §8); the drain itself is the controller's
// (agent/control, drain.go).

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// drainHandler serves /v1/drain:
//
//	POST  drain this agent, then stop it. Without force=true the drain is
//	      refused (409) when the other active agents are too few to hold
//	      each partition's replicas, and a drain that does not finish in
//	      time leaves the agent running and active again; with force=true
//	      the agent stops at the time limit whatever is left, after sealing
//	      and uploading what only it holds. timeout= (a Go duration) is
//	      the limit, default --drain-timeout, or 5 minutes when that is 0.
//	GET   progress: {"agent_id", "draining", "replicas", "error"}.
//
// agent=ID sends either on to that agent (found by gossip), so one
// agent's address serves for the whole cluster.
func (a *Agent) drainHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if id := q.Get("agent"); id != "" {
		a.forwardDrain(w, r, id)
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		if status, err := a.ctl.StartDrain(q.Get("force") == "true", q.Get("timeout")); err != nil {
			writeDrainJSON(w, status, map[string]any{"agent_id": a.id, "error": err.Error()})
			return
		}
	default:
		writeDrainJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "use GET or POST"})
		return
	}
	out := map[string]any{"agent_id": a.id, "draining": a.ctl.Draining(), "replicas": len(a.localPartitions())}
	if e := a.ctl.DrainErr(); e != "" {
		out["error"] = e
	}
	writeDrainJSON(w, http.StatusOK, out)
}

// forwardDrain passes a drain request on to agent id's HTTP address.
func (a *Agent) forwardDrain(w http.ResponseWriter, r *http.Request, id string) {
	n, err := strconv.ParseInt(id, 10, 32)
	if err != nil {
		writeDrainJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("drain: agent %q: want an agent id", id)})
		return
	}
	if int32(n) == a.id {
		q := r.URL.Query()
		q.Del("agent")
		r.URL.RawQuery = q.Encode()
		a.drainHandler(w, r)
		return
	}
	addr := ""
	for _, m := range a.members.Members() {
		if m.ID == int32(n) {
			addr = m.HTTPAddr
		}
	}
	if addr == "" {
		writeDrainJSON(w, http.StatusNotFound, map[string]any{"agent_id": n, "error": fmt.Sprintf("drain: agent %d is not a live member of the cluster", n)})
		return
	}
	q := r.URL.Query()
	q.Del("agent")
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+"/v1/drain?"+q.Encode(), nil)
	if err == nil {
		var resp *http.Response
		if resp, err = drainClient.Do(req); err == nil {
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
			return
		}
	}
	writeDrainJSON(w, http.StatusBadGateway, map[string]any{"agent_id": n, "error": fmt.Sprintf("drain: agent %d at %s: %v", n, addr, err)})
}

var drainClient = &http.Client{Timeout: 10 * time.Second}

func writeDrainJSON(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// alone reports whether gossip shows no live agent but this one.
func (a *Agent) alone() bool {
	if a.members == nil {
		return true
	}
	for _, m := range a.members.Members() {
		if m.ID != a.id {
			return false
		}
	}
	return true
}
