package httpapi

// The drain endpoint (docs/design.md §8); the drain itself is the controller's
// (agent/control/drain.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/membership"
)

// drainHandler serves /v1/drain:
//
//	POST  drain this agent, then stop it. Without force the drain is
//	      refused (409) when the other active agents are too few to hold
//	      each partition's replicas, and a drain that does not finish in
//	      time leaves the agent running and active again; with force the
//	      agent stops at the time limit whatever is left, after sealing
//	      and uploading what only it holds. timeout (a Go duration) is the
//	      limit, default --drain-timeout, or 5 minutes when that is 0.
//	      The body is a JSON object {"force": bool, "timeout": "90s"}, both
//	      optional, sent as Content-Type: application/json (see
//	      stateChangeRequest); force=true and timeout= in the query still
//	      work, the body's fields win.
//	GET   progress: {"agent_id", "draining", "replicas", "error"}.
//
// agent=ID sends either on to that agent, so one agent's address serves for
// the whole cluster; only to the address the store registered for ID (see
// peerHTTPAddr).
func (s *Server) drainHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req := drainBody{}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		var ok bool
		if req, ok = stateChangeRequest(w, r); !ok {
			return
		}
		if req.Force == nil {
			force := q.Get("force") == "true"
			req.Force = &force
		}
		if req.Timeout == nil {
			timeout := q.Get("timeout")
			req.Timeout = &timeout
		}
	default:
		writeDrainJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "use GET or POST"})
		return
	}
	if id := q.Get("agent"); id != "" {
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil || n < 0 {
			writeDrainJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("drain: agent %q: want an agent id", id)})
			return
		}
		if int32(n) != s.deps.ID {
			s.forwardDrain(w, r, int32(n), req)
			return
		}
	}
	if r.Method == http.MethodPost {
		if status, err := s.deps.Drains.StartDrain(*req.Force, *req.Timeout); err != nil {
			writeDrainJSON(w, status, map[string]any{"agent_id": s.deps.ID, "error": err.Error()})
			return
		}
	}
	out := map[string]any{"agent_id": s.deps.ID, "draining": s.deps.Drains.Draining(), "replicas": len(s.host.Partitions())}
	if e := s.deps.Drains.DrainErr(); e != "" {
		out["error"] = e
	}
	writeDrainJSON(w, http.StatusOK, out)
}

// drainBody is the JSON body of POST /v1/drain.
type drainBody struct {
	Force   *bool   `json:"force,omitempty"`
	Timeout *string `json:"timeout,omitempty"`
}

// maxStateChangeBody bounds the body of a state-changing request.
const maxStateChangeBody = 4 << 10

// stateChangeRequest admits a drain only when no web page elsewhere could
// have made a browser send it (sameOriginJSON), and decodes its body.
func stateChangeRequest(w http.ResponseWriter, r *http.Request) (drainBody, bool) {
	var body drainBody
	if !sameOriginJSON(w, r) {
		return body, false
	}
	return body, decodeJSONBody(w, r, maxStateChangeBody, &body, `{"force": false}`)
}

// sameOriginJSON admits a request that changes the agent's state only
// when no web page elsewhere could have made a browser send it: it must
// carry a JSON object with Content-Type: application/json (a cross-origin
// page cannot send that type without a CORS preflight, which this server
// never grants), and an Origin header, if any, must name the host the
// request was sent to. It answers the refusal itself (415 or 403) and
// then reports false. Where the HTTP API takes no credentials this is
// what keeps a browser on the operator's network from draining agents; it
// does not stop DNS rebinding, which makes the attacker's page
// same-origin (docs/operations.md). The console's actions, which a cookie
// may authorize, need a CSRF token besides (consolesession.go).
func sameOriginJSON(w http.ResponseWriter, r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || u.Host != r.Host {
			writeDrainJSON(w, http.StatusForbidden, map[string]any{"error": fmt.Sprintf("Origin %q is not this agent (%s): cross-origin requests are refused", origin, r.Host)})
			return false
		}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeDrainJSON(w, http.StatusUnsupportedMediaType, map[string]any{"error": "send a JSON object body with Content-Type: application/json"})
		return false
	}
	return true
}

// decodeJSONBody decodes r's body, at most limit bytes, into v, refusing
// unknown fields; on failure it answers 400 naming example and reports
// false.
func decodeJSONBody(w http.ResponseWriter, r *http.Request, limit int64, v any, example string) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeDrainJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("body: want a JSON object such as %s: %v", example, err)})
		return false
	}
	return true
}

// forwardDrain passes a drain request on to agent n's HTTP address, body
// (POST only) as JSON.
func (s *Server) forwardDrain(w http.ResponseWriter, r *http.Request, n int32, body drainBody) {
	q := r.URL.Query()
	q.Del("agent")
	var members []membership.Member
	if s.deps.Members != nil {
		members = s.deps.Members.Members()
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	addr, status, err := s.peerHTTP(ctx, n, members)
	if err != nil {
		msg := "drain: " + err.Error()
		if status == http.StatusForbidden {
			msg += "; drain it through its own address"
		}
		writeDrainJSON(w, status, map[string]any{"agent_id": n, "error": msg})
		return
	}
	var payload io.Reader
	if r.Method == http.MethodPost {
		b, _ := json.Marshal(body)
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, s.scheme+"://"+addr+"/v1/drain?"+q.Encode(), payload)
	if err == nil {
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		s.tokens.authorize(req)
		var resp *http.Response
		if resp, err = s.peerClient.Do(req); err == nil {
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, io.LimitReader(resp.Body, 64<<10))
			return
		}
	}
	writeDrainJSON(w, http.StatusBadGateway, map[string]any{"agent_id": n, "error": fmt.Sprintf("drain: agent %d at %s: %v", n, addr, err)})
}

func writeDrainJSON(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
