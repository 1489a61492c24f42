package agent

// HTTP authentication (--http-token-file). The HTTP port drains agents and
// serves profiles of the process, so with a token file every request that
// changes state (any method but GET and HEAD) and every /debug/pprof
// request must carry "Authorization: Bearer <token>" with a token of the
// file; /metrics, /healthz, /readyz and the read-only pages stay open, as
// Prometheus scrapers and kubelet probes carry no credentials. The agents
// of a cluster share the file: a drain forwarded to another agent carries
// this agent's first token. Without a file nothing is asked, as Kafka
// allows everything without an authorizer; the agent says so at start.

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/strata-streaming/strata/internal/secretfile"
)

// httpTokenMinBytes is the shortest token taken: 128 bits of base64 or
// hex, so that a guessable word is refused at start rather than deployed.
const httpTokenMinBytes = 22

// httpTokens is the tokens of --http-token-file, kept as SHA-256 sums so
// that comparing a presented token takes the same time whichever token
// it resembles.
type httpTokens struct {
	mu    sync.RWMutex
	sums  [][sha256.Size]byte
	first string // sent on this agent's own calls to other agents
}

func (t *httpTokens) set(lines []secretfile.Line) error {
	sums := make([][sha256.Size]byte, 0, len(lines))
	for _, l := range lines {
		if len(l.Text) < httpTokenMinBytes {
			return fmt.Errorf("line %d: a token shorter than %d bytes (make one with: head -c 32 /dev/urandom | base64)", l.Number, httpTokenMinBytes)
		}
		sums = append(sums, sha256.Sum256([]byte(l.Text)))
	}
	t.mu.Lock()
	t.sums, t.first = sums, lines[0].Text
	t.mu.Unlock()
	return nil
}

// valid reports whether r carries one of the tokens.
func (t *httpTokens) valid(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || got == "" {
		return false
	}
	sum := sha256.Sum256([]byte(got))
	t.mu.RLock()
	defer t.mu.RUnlock()
	match := 0
	for i := range t.sums {
		match |= subtle.ConstantTimeCompare(sum[:], t.sums[i][:])
	}
	return match == 1
}

// authorize sets the header that lets another agent of the cluster take
// req as this one's.
func (t *httpTokens) authorize(req *http.Request) {
	if t == nil {
		return
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	req.Header.Set("Authorization", "Bearer "+t.first)
}

// loadHTTPTokens reads --http-token-file, and returns the watcher that
// keeps the tokens in step with it; nil and nil without a file.
func (a *Agent) loadHTTPTokens() (*httpTokens, *secretfile.Watcher, error) {
	if a.cfg.HTTPTokenFile == "" {
		// Loud only where others can reach the port: on loopback (the
		// embedded single agent, tests), or on a machine whose only
		// addresses are loopback ones, only local users can.
		level := slog.LevelInfo
		if reachableFromOthers(a.cfg.HTTPAddr) {
			level = slog.LevelWarn
		}
		a.logger.Log(context.Background(), level, "the HTTP port asks no credentials: anyone who reaches it can drain this agent; set --http-token-file (docs/security.md)",
			"http_addr", a.cfg.HTTPAddr)
		return nil, nil, nil
	}
	t := &httpTokens{}
	w := &secretfile.Watcher{Path: a.cfg.HTTPTokenFile, Interval: 5 * time.Second, Apply: t.set, What: "HTTP tokens", Logger: a.logger}
	if err := w.Load(); err != nil {
		return nil, nil, fmt.Errorf("--http-token-file %s: %w", a.cfg.HTTPTokenFile, err)
	}
	return t, w, nil
}

// requireToken wraps the HTTP handler: without --http-token-file it is h.
func (t *httpTokens) requireToken(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := (r.Method == http.MethodGet || r.Method == http.MethodHead) && !strings.HasPrefix(r.URL.Path, "/debug/pprof/")
		if !open && !t.valid(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="strata"`)
			http.Error(w, "this request needs Authorization: Bearer <a token of the agent's --http-token-file>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// reachableFromOthers reports whether a listener bound to addr can be
// reached from another machine: its host is not a loopback one, and when
// it binds every interface, the machine has an address that is not.
func reachableFromOthers(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	switch {
	case host == "":
		ip = net.IPv4zero // every interface
	case ip == nil:
		return true // a name: assume the worst
	}
	if !ip.IsUnspecified() {
		return !ip.IsLoopback()
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
			return true
		}
	}
	return false
}
