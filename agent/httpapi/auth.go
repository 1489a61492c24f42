package httpapi

// The credentials of HTTP requests (the package comment, "Who may call"):
// the bearer tokens of --http-token-file, and the guard that asks each
// request for what it needs (paths.go) of a token or a certificate
// principal (principal.go).

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
	"github.com/strata-streaming/strata/internal/tlsconfig"
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
func (s *Server) loadHTTPTokens() (*httpTokens, *secretfile.Watcher, error) {
	if s.cfg.TokenFile == "" {
		if s.cfg.principals() {
			s.logger.Info("the HTTP port takes client certificates only: changes need a principal allowed ALTER on the CLUSTER", "http_addr", s.cfg.Addr)
			return nil, nil, nil
		}
		if s.cfg.refusesChanges() {
			s.logger.Warn("the HTTP port takes no credentials and the agent has --authorizer acl: it refuses drains, every other change and the message browser's records (401); set --http-token-file (docs/security.md), or --http-allow-unauthenticated-changes to let anyone who reaches the port make them",
				"http_addr", s.cfg.Addr)
			return nil, nil, nil
		}
		// Loud only where others can reach the port: on loopback (the
		// embedded single agent, tests), or on a machine whose only
		// addresses are loopback ones, only local users can.
		level := slog.LevelInfo
		if reachableFromOthers(s.cfg.Addr) || s.cfg.ACLs {
			level = slog.LevelWarn
		}
		s.logger.Log(context.Background(), level, "the HTTP port asks no credentials: anyone who reaches it can drain this agent; set --http-token-file (docs/security.md)",
			"http_addr", s.cfg.Addr)
		return nil, nil, nil
	}
	t := &httpTokens{}
	w := &secretfile.Watcher{Path: s.cfg.TokenFile, Interval: 5 * time.Second, Apply: t.set, What: "HTTP tokens", Logger: s.logger}
	if err := w.Load(); err != nil {
		return nil, nil, fmt.Errorf("--http-token-file %s: %w", s.cfg.TokenFile, err)
	}
	return t, w, nil
}

// httpGuard decides which HTTP requests may pass (the package comment,
// "Who may call").
type httpGuard struct {
	tokens *httpTokens // nil without --http-token-file
	// principals is nil unless certificate principals may authorize.
	principals *httpPrincipals
	// restricted are the read-only path groups that need credentials.
	restricted map[pathGroup]bool
	// refuseChanges: the port takes no credentials, yet the agent has
	// ACLs (Config.refusesChanges): every change is refused.
	refuseChanges bool
	// refuseRecords: the port takes no credentials, yet the agent has
	// ACLs: no records are served (the message browser), as no request
	// could show it may READ them.
	refuseRecords bool
}

// newHTTPGuard is nil when the port asks no credentials and refuses
// nothing.
func (s *Server) newHTTPGuard() *httpGuard {
	g := &httpGuard{tokens: s.tokens, restricted: map[pathGroup]bool{}}
	if s.cfg.principals() {
		// Validate parsed the rules already.
		mapper, _ := tlsconfig.ParsePrincipalRules(s.cfg.PrincipalMappingRules)
		g.principals = &httpPrincipals{mapper: mapper, authorize: s.host.Authorize}
	}
	if g.tokens == nil && g.principals == nil {
		if s.cfg.ACLs {
			return &httpGuard{refuseChanges: s.cfg.refusesChanges(), refuseRecords: true}
		}
		return nil
	}
	for _, name := range s.cfg.RequireAuthFor {
		g.restricted[pathGroup(name)] = true // Validate checked the names
	}
	if s.cfg.ACLs {
		// ACLs guard Kafka's Fetch: the records are not to be read
		// around them through HTTP.
		g.restricted[pathsRecords] = true
	}
	return g
}

// httpAuthError is a refused request: its status and what to tell the
// client.
type httpAuthError struct {
	status int
	msg    string
}

// refusedChangeMessage answers a change on a port that takes no
// credentials while the agent has ACLs.
const refusedChangeMessage = "this agent has --authorizer acl but its HTTP port takes no credentials, so it refuses requests that change state: " +
	"set --http-token-file (and send Authorization: Bearer <token>), or --http-tls-client-auth with certificate principals; " +
	"--http-allow-unauthenticated-changes lets anyone who reaches the port make them"

// refusedRecordsMessage answers a read of records on a port that takes
// no credentials while the agent has ACLs.
const refusedRecordsMessage = "this agent has --authorizer acl but its HTTP port takes no credentials, so it serves no records (a Kafka Fetch needs READ on the topic): " +
	"set --http-token-file (and send Authorization: Bearer <token>), or --http-tls-client-auth with certificate principals allowed READ on the topic"

// check returns nil when r may pass.
func (g *httpGuard) check(r *http.Request) *httpAuthError {
	if g.tokens == nil && g.principals == nil {
		// A port without credentials keeps serving its other reads, and
		// profiles with --http-pprof, as before.
		switch {
		case g.refuseChanges && isChange(r):
			return &httpAuthError{http.StatusUnauthorized, refusedChangeMessage}
		case g.refuseRecords && groupOf(r.URL.Path) == pathsRecords:
			return &httpAuthError{http.StatusUnauthorized, refusedRecordsMessage}
		}
		return nil
	}
	return g.checkNeed(r, needOf(r, g.restricted))
}

// operator returns nil when r carries an operator's credential, the one a
// change needs (a token, or a principal allowed ALTER on the CLUSTER), or
// the port asks none (a nil guard); else the refusal. The console's
// actions run as the agent's own Kafka client only for such a request
// (consoleadmin.go).
func (g *httpGuard) operator(r *http.Request) *httpAuthError {
	switch {
	case !g.takesCredentials() && g != nil && g.refuseChanges:
		return &httpAuthError{http.StatusUnauthorized, refusedChangeMessage}
	case !g.takesCredentials():
		return nil // changes need no credentials here
	}
	return g.checkNeed(r, needAlter)
}

// takesCredentials reports whether the port takes a token or certificate
// principals; false for a nil guard.
func (g *httpGuard) takesCredentials() bool {
	return g != nil && (g.tokens != nil || g.principals != nil)
}

// checkNeed returns nil when r's credentials allow need.
func (g *httpGuard) checkNeed(r *http.Request, need httpNeed) *httpAuthError {
	if need == needNothing {
		return nil
	}
	if g.tokens != nil && g.tokens.valid(r) {
		return nil
	}
	var principal string
	var unmapped error
	if g.principals != nil {
		principal, unmapped = g.principals.of(r)
		if principal != "" && g.principals.allowed(r, principal, need) {
			return nil
		}
	}
	var ways []string
	if g.tokens != nil {
		ways = append(ways, "Authorization: Bearer <a token of the agent's --http-token-file>")
	}
	if g.principals != nil {
		ways = append(ways, "a client certificate whose principal may "+need.operation()+" "+need.resource(r))
	}
	what := "this request needs " + strings.Join(ways, ", or ")
	switch {
	case r.Header.Get("Authorization") != "" && g.tokens == nil:
		return &httpAuthError{http.StatusUnauthorized, "this agent takes no bearer tokens (no --http-token-file); " + what}
	case r.Header.Get("Authorization") != "":
		return &httpAuthError{http.StatusUnauthorized, "the bearer token is not one of the agent's; " + what}
	case principal != "":
		return &httpAuthError{http.StatusForbidden, fmt.Sprintf("%s may not %s %s (grant it with %s); %s",
			principal, need.operation(), need.resource(r), need.grant(r, principal), what)}
	case unmapped != nil:
		return &httpAuthError{http.StatusUnauthorized, "the client certificate names no principal: " + unmapped.Error() + "; " + what}
	}
	return &httpAuthError{http.StatusUnauthorized, what}
}

// wrap puts the guard in front of h; a nil guard is h.
func (g *httpGuard) wrap(h http.Handler) http.Handler {
	if g == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if consoleAuthenticates(r.URL.Path) {
			// A signed-in session is a credential the guard does not
			// know: these handlers ask for what they need themselves.
			h.ServeHTTP(w, r)
			return
		}
		if e := g.check(r); e != nil {
			if e.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="strata"`)
			}
			http.Error(w, e.msg, e.status)
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
