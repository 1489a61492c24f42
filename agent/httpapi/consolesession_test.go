package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// countedSession is a session whose close the test counts.
func countedSession(id string, closes map[string]*atomic.Int32) *consoleSession {
	n := &atomic.Int32{}
	closes[id] = n
	return &consoleSession{id: id, principal: "User:" + id, close: func() { n.Add(1) }}
}

// TestConsoleSessionsBoundedAndIdle: the store keeps at most max
// sessions, evicting the least recently used; a session idle for the
// limit is gone (at get and at a sweep); each evicted, expired, removed
// or shut-down session's client is closed exactly once.
func TestConsoleSessionsBoundedAndIdle(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	c := newConsoleSessions(3, 30*time.Minute, clock.now)
	closes := map[string]*atomic.Int32{}
	closed := func(id string) int32 { return closes[id].Load() }

	for _, id := range []string{"a", "b", "c"} {
		c.add(countedSession(id, closes))
		clock.advance(time.Minute)
	}
	// a is used: b is now the least recently used.
	if c.get("a") == nil {
		t.Fatal("a is gone")
	}
	c.add(countedSession("d", closes))
	if c.len() != 3 || c.get("b") != nil || closed("b") != 1 {
		t.Fatalf("a fourth session: %d kept, b closed %d times; want 3 kept and b evicted", c.len(), closed("b"))
	}
	for _, id := range []string{"a", "c", "d"} {
		if c.get(id) == nil || closed(id) != 0 {
			t.Fatalf("%s was evicted (closed %d)", id, closed(id))
		}
	}

	// Idle expiry: c unused for 30 minutes ends at get; a and d, used 10
	// minutes later, live on until the sweep after their own 30 minutes.
	clock.advance(20 * time.Minute)
	c.get("a")
	c.get("d")
	clock.advance(10 * time.Minute)
	if c.get("c") != nil || closed("c") != 1 {
		t.Fatalf("c idle 30 minutes: still there or closed %d times", closed("c"))
	}
	if c.get("a") == nil {
		t.Fatal("a, used 10 minutes ago, expired")
	}
	clock.advance(29*time.Minute + 59*time.Second)
	c.sweep()
	if c.len() != 1 || closed("d") != 1 || closed("a") != 0 {
		t.Fatalf("sweep: %d kept, d closed %d, a closed %d; want d swept and a kept", c.len(), closed("d"), closed("a"))
	}
	c.remove("a")
	c.remove("a")
	if closed("a") != 1 || c.len() != 0 {
		t.Fatalf("remove twice: a closed %d times", closed("a"))
	}

	// Shut down: every session ends, and one added later is closed at once.
	c.add(countedSession("e", closes))
	c.closeAll()
	c.closeAll()
	c.add(countedSession("f", closes))
	if closed("e") != 1 || closed("f") != 1 || c.len() != 0 {
		t.Fatalf("closeAll: e closed %d, f closed %d, %d kept", closed("e"), closed("f"), c.len())
	}
}

// TestConsoleSessionsConcurrent (run with -race): sign-ins, uses and
// sign-outs at once never keep more than the bound, and every client is
// closed exactly once by the end.
func TestConsoleSessionsConcurrent(t *testing.T) {
	c := newConsoleSessions(8, time.Hour, time.Now)
	var mu sync.Mutex
	closes := map[string]*atomic.Int32{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("%d-%d", g, i)
				mu.Lock()
				s := countedSession(id, closes)
				mu.Unlock()
				c.add(s)
				c.get(id)
				if n := c.len(); n > 8 {
					t.Errorf("%d sessions kept, bound 8", n)
				}
				if i%3 == 0 {
					c.remove(id)
				}
			}
		})
	}
	wg.Wait()
	c.closeAll()
	for id, n := range closes {
		if n.Load() != 1 {
			t.Errorf("session %s closed %d times", id, n.Load())
		}
	}
}

// TestConsoleCSRF: a change to a console action needs the CSRF token of
// its cookie whether a session or an open port authorizes it; a bearer
// token needs none; a cross-site or non-JSON request is refused before
// any credential is looked at; without credentials an agent with ACLs
// refuses (secure by default) and points at the sign-in. The action's
// body is one Validate refuses, so a request that passes every check
// gets 400 without reaching Kafka.
func TestConsoleCSRF(t *testing.T) {
	const token = "Y29uc29sZS1jc3JmLXRlc3QtdG9rZW4tMTIzNDU2"
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	handler := func(cfg Config) (*Server, http.Handler) {
		s := newTestServer(t, cfg, prometheus.NewRegistry())
		s.SetDeps(Deps{ID: 3, StartedAt: time.Now(), KafkaAddr: "127.0.0.1:1", Login: &ConsoleLogin{Addr: "127.0.0.1:1", Mechanisms: []string{"SCRAM-SHA-512"}}})
		s.guard = s.newHTTPGuard()
		t.Cleanup(s.sessions.closeAll)
		return s, s.guard.wrap(s.routes())
	}
	type req struct {
		method, path, body, cookie, csrf, bearer, origin, contentType string
	}
	do := func(h http.Handler, q req) *httptest.ResponseRecorder {
		r := httptest.NewRequest(q.method, q.path, strings.NewReader(q.body))
		r.Host = "agent:9644"
		if q.contentType == "" {
			q.contentType = "application/json"
		}
		r.Header.Set("Content-Type", q.contentType)
		if q.cookie != "" {
			r.AddCookie(&http.Cookie{Name: consoleSessionCookie, Value: q.cookie})
		}
		if q.csrf != "" {
			r.Header.Set(consoleCSRFHeader, q.csrf)
		}
		if q.bearer != "" {
			r.Header.Set("Authorization", "Bearer "+q.bearer)
		}
		if q.origin != "" {
			r.Header.Set("Origin", q.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const action = "/v1/console/actions/create-topic"
	const invalid = `{"partitions": 3}` // no topic: Validate's 400

	// ACLs and a token file: a session, the token, or nothing.
	s, h := handler(Config{ACLs: true, TokenFile: tokenFile})
	s.sessions.add(&consoleSession{id: "sess-alice", principal: "User:alice"})
	good := s.sessions.csrfFor("sess-alice")
	for _, c := range []struct {
		name string
		q    req
		want int
		says string
	}{
		{"session with its token", req{cookie: "sess-alice", csrf: good}, http.StatusBadRequest, "name the topic"},
		{"session without a token", req{cookie: "sess-alice"}, http.StatusForbidden, consoleCSRFHeader},
		{"session with another cookie's token", req{cookie: "sess-alice", csrf: s.sessions.csrfFor("other")}, http.StatusForbidden, consoleCSRFHeader},
		{"cross-site", req{cookie: "sess-alice", csrf: good, origin: "http://evil.example"}, http.StatusForbidden, "cross-origin"},
		{"a form post", req{cookie: "sess-alice", csrf: good, contentType: "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, "JSON"},
		{"bearer token, no CSRF needed", req{bearer: token}, http.StatusBadRequest, "name the topic"},
		{"wrong bearer token", req{bearer: "not-the-token-but-long-enough"}, http.StatusUnauthorized, "sign in"},
		{"nothing", req{}, http.StatusUnauthorized, "sign in"},
		{"an unknown session", req{cookie: "gone", csrf: s.sessions.csrfFor("gone")}, http.StatusUnauthorized, "sign in"},
	} {
		c.q.method, c.q.path = "POST", action
		if c.q.body == "" {
			c.q.body = invalid
		}
		w := do(h, c.q)
		if w.Code != c.want || !strings.Contains(w.Body.String(), c.says) {
			t.Errorf("%s: %d %s, want %d naming %q", c.name, w.Code, w.Body.String(), c.want, c.says)
		}
	}
	// Sign-out needs the token too.
	if w := do(h, req{method: "DELETE", path: "/v1/console/session", cookie: "sess-alice"}); w.Code != http.StatusForbidden || s.sessions.get("sess-alice") == nil {
		t.Errorf("sign-out without CSRF: %d, session kept %v", w.Code, s.sessions.get("sess-alice") != nil)
	}
	if w := do(h, req{method: "DELETE", path: "/v1/console/session", cookie: "sess-alice", csrf: good}); w.Code != http.StatusNoContent || s.sessions.get("sess-alice") != nil {
		t.Errorf("sign-out: %d, session kept %v", w.Code, s.sessions.get("sess-alice") != nil)
	}

	// Secure by default: ACLs, no HTTP credentials. Nothing gets 401; a
	// signed-in session, with its token, gets through.
	s, h = handler(Config{ACLs: true})
	if w := do(h, req{method: "POST", path: action, body: invalid}); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "--http-token-file") {
		t.Errorf("ACLs without credentials: %d %s, want 401 naming --http-token-file", w.Code, w.Body.String())
	}
	s.sessions.add(&consoleSession{id: "sess-bob", principal: "User:bob"})
	if w := do(h, req{method: "POST", path: action, body: invalid, cookie: "sess-bob", csrf: s.sessions.csrfFor("sess-bob")}); w.Code != http.StatusBadRequest {
		t.Errorf("ACLs without HTTP credentials, signed in: %d %s, want the action's 400", w.Code, w.Body.String())
	}
	// Reads need a principal too, but no CSRF token.
	if w := do(h, req{method: "GET", path: "/v1/console/admin/acls"}); w.Code != http.StatusUnauthorized {
		t.Errorf("a read without credentials: %d", w.Code)
	}

	// ACLs, no credentials, and the operator's opt-out: changes are
	// open, with a CSRF token.
	s, h = handler(Config{ACLs: true, AllowUnauthenticatedChanges: true})
	if w := do(h, req{method: "POST", path: action, body: invalid, cookie: "anon", csrf: s.sessions.csrfFor("anon")}); w.Code != http.StatusBadRequest {
		t.Errorf("--http-allow-unauthenticated-changes with CSRF: %d %s, want the action's 400", w.Code, w.Body.String())
	}
	if w := do(h, req{method: "POST", path: action, body: invalid, cookie: "anon"}); w.Code != http.StatusForbidden {
		t.Errorf("--http-allow-unauthenticated-changes without CSRF: %d", w.Code)
	}

	// An open port (no authorizer, no credentials): the cookie GET
	// /v1/console/session hands out, and its token.
	_, h = handler(Config{})
	w := do(h, req{method: "GET", path: "/v1/console/session"})
	var who sessionAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &who); err != nil || who.Via != "open" || !who.Can.CreateTopic || who.Can.ACLs || who.CSRF == "" {
		t.Fatalf("GET /v1/console/session on an open port: %s %v", w.Body.String(), err)
	}
	var cookie *http.Cookie
	for _, ck := range w.Result().Cookies() {
		if ck.Name == consoleSessionCookie {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || len(cookie.Value) < 43 {
		t.Fatalf("the session cookie: %+v", cookie)
	}
	if w := do(h, req{method: "POST", path: action, body: invalid, cookie: cookie.Value}); w.Code != http.StatusForbidden {
		t.Errorf("open port without CSRF: %d", w.Code)
	}
	if w := do(h, req{method: "POST", path: action, body: invalid, cookie: cookie.Value, csrf: who.CSRF}); w.Code != http.StatusBadRequest {
		t.Errorf("open port with CSRF: %d %s", w.Code, w.Body.String())
	}
}
