package httpapi

// The console's admin actions (issue 32, items 3 and 4): who a request
// acts as, and the endpoints that run agent/console/admin's actions and
// reads as that principal through the Kafka API.
//
//	GET    /v1/console/session          who the caller is, its CSRF token, what it may do
//	POST   /v1/console/session          sign in as a Kafka user (SASL)
//	DELETE /v1/console/session          sign out
//	POST   /v1/console/actions/<name>   an action (admin.Names), JSON in and out
//	GET    /v1/console/admin/<name>     a read the forms need (admin.Reads)
//
// Who a request acts as, the first that applies (the package comment,
// "Who may call", has the rules of the port itself):
//
//  1. a bearer token of --http-token-file: the agent's own client (the
//     inter-agent listener's credentials, as the console's group view);
//  2. the cookie of a signed-in session: that Kafka user's client, so the
//     ACLs decide exactly as for any Kafka client of that user;
//  3. an operator's other credential, which a drain would take: a client
//     certificate whose principal may ALTER the CLUSTER, or nothing at all
//     on a port that asks none (no credentials and no authorizer, or
//     --http-allow-unauthenticated-changes): the agent's own client;
//  4. else nothing: 401, or 403 for a certificate the ACLs refuse; with
//     --authorizer acl and no HTTP credentials, the secure-by-default 401.
//
// Every change authorized by 2 or 3 must carry the CSRF token of its
// cookie (consolesession.go), besides passing sameOriginJSON.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-streaming/strata/agent/console/admin"
)

const (
	// consoleActionTimeout bounds one action or read, its Kafka requests
	// included.
	consoleActionTimeout = 30 * time.Second
	// consoleLoginTimeout bounds a sign-in: the client's first request.
	consoleLoginTimeout = 10 * time.Second
	// consoleActionMaxBody bounds an action's JSON body.
	consoleActionMaxBody = 16 << 10
	// consoleMetadataMinAge is how long a session's client reuses a
	// Metadata answer (franz-go's default is 5 s).
	consoleMetadataMinAge = 100 * time.Millisecond
	// consoleLoginsAtOnce bounds the sign-ins in progress; more get 503.
	consoleLoginsAtOnce = 4
)

// ConsoleLogin is the Kafka listener the console's sign-in dials: the
// agent's first SASL listener (the inter-agent one when it is SASL).
type ConsoleLogin struct {
	// Addr is its advertised host:port.
	Addr string
	// TLS is set for SASL_SSL: trust as the agent's followers do.
	TLS *tls.Config
	// Mechanisms are the SASL mechanisms it enables that take a user and
	// a password: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.
	Mechanisms []string
}

// consoleAuthenticates reports whether path's handler asks for
// credentials itself (the guard lets it through).
func consoleAuthenticates(path string) bool {
	return path == "/v1/console/session" || strings.HasPrefix(path, "/v1/console/actions/") ||
		strings.HasPrefix(path, "/v1/console/admin/")
}

func (s *Server) registerConsoleAdmin(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/console/session", s.consoleSessionGet)
	mux.HandleFunc("POST /v1/console/session", s.consoleSignIn)
	mux.HandleFunc("DELETE /v1/console/session", s.consoleSignOut)
	mux.HandleFunc("POST /v1/console/actions/{name}", s.consoleAction)
	mux.HandleFunc("GET /v1/console/admin/{name}", s.consoleRead)
}

// consoleActor is who an admin request acts as.
type consoleActor struct {
	// principal names the caller: User:<name> for a session, else what
	// authorized the request.
	principal string
	// via is "token", "session", "certificate" or "open".
	via  string
	adm  *kadm.Client
	done func() // releases adm
}

// consoleActor finds who r acts as (the file comment), with a Kafka
// client for it; for a change it also checks the CSRF token. On a refusal
// it answers r itself and reports false. The caller calls done.
func (s *Server) consoleActor(w http.ResponseWriter, r *http.Request, change bool) (*consoleActor, bool) {
	if s.tokens != nil && s.tokens.valid(r) {
		return s.agentActor(w, "operator (HTTP token)", "token")
	}
	if sess := s.sessions.get(sessionCookie(r)); sess != nil {
		if change && !s.sessions.csrfValid(r) {
			writeCSRFRefusal(w)
			return nil, false
		}
		return &consoleActor{principal: sess.principal, via: "session", adm: sess.adm, done: func() {}}, true
	}
	if e := s.guard.operator(r); e != nil {
		msg := e.msg
		if s.deps.Login != nil {
			msg = "sign in with a Kafka user (POST /v1/console/session), or: " + msg
		}
		if e.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="strata"`)
		}
		writeDrainJSON(w, e.status, map[string]any{"error": msg})
		return nil, false
	}
	if change && !s.sessions.csrfValid(r) {
		writeCSRFRefusal(w)
		return nil, false
	}
	if !s.guard.takesCredentials() {
		return s.agentActor(w, "anyone (the HTTP port asks no credentials)", "open")
	}
	return s.agentActor(w, s.certificatePrincipal(r)+" (client certificate)", "certificate")
}

// agentActor acts with a client of the agent's own that lives for one
// request.
func (s *Server) agentActor(w http.ResponseWriter, principal, via string) (*consoleActor, bool) {
	cl, err := s.kafkaClient()
	if err != nil {
		writeDrainJSON(w, http.StatusInternalServerError, map[string]any{"error": "console: Kafka client: " + err.Error()})
		return nil, false
	}
	return &consoleActor{principal: principal, via: via, adm: kadm.NewClient(cl), done: cl.Close}, true
}

func writeCSRFRefusal(w http.ResponseWriter) {
	writeDrainJSON(w, http.StatusForbidden, map[string]any{"error": "a change needs the " + consoleCSRFHeader +
		" header with the csrf of GET /v1/console/session (cross-site request protection); reload the page"})
}

// sessionAnswer is GET /v1/console/session's answer.
type sessionAnswer struct {
	// Principal and Via say who the caller acts as; empty when nobody.
	Principal string `json:"principal"`
	Via       string `json:"via"`
	// CSRF goes in X-Strata-CSRF on every change.
	CSRF string    `json:"csrf"`
	Can  admin.Can `json:"can"`
	// Login lists the mechanisms a Kafka user may sign in with; empty
	// when the agent has no SASL listener.
	Login []string `json:"login"`
	// Tokens says the port takes bearer tokens (--http-token-file).
	Tokens bool `json:"tokens"`
	// Refusal says why nobody is signed in.
	Refusal string `json:"refusal,omitempty"`
}

// consoleSessionGet serves GET /v1/console/session. It gives a browser
// without the cookie one (with no session behind it), so that the CSRF
// token has something to belong to.
func (s *Server) consoleSessionGet(w http.ResponseWriter, r *http.Request) {
	cookie := sessionCookie(r)
	if cookie == "" {
		cookie = newSessionID()
		s.setSessionCookie(w, cookie)
	}
	writeJSON(w, s.whoIs(r, cookie))
}

// whoIs answers who r acts as (consoleActor's order) and what it may do.
func (s *Server) whoIs(r *http.Request, cookie string) sessionAnswer {
	out := sessionAnswer{CSRF: s.sessions.csrfFor(cookie), Login: []string{}, Tokens: s.tokens != nil}
	if s.deps.Login != nil {
		out.Login = s.deps.Login.Mechanisms
	}
	switch sess := s.sessions.get(cookie); {
	case s.tokens != nil && s.tokens.valid(r):
		out.Principal, out.Via, out.Can = "operator (HTTP token)", "token", admin.All()
	case sess != nil:
		out.Principal, out.Via, out.Can = sess.principal, "session", admin.CanOf(s.host, sess.principal, s.kafkaSideHost())
	default:
		if e := s.guard.operator(r); e != nil {
			out.Refusal = e.msg
			return out
		}
		out.Via, out.Can = "open", admin.All()
		out.Principal = "anyone (the HTTP port asks no credentials)"
		if s.guard.takesCredentials() {
			out.Via, out.Principal = "certificate", s.certificatePrincipal(r)+" (client certificate)"
		}
	}
	// Without an authorizer the ACL requests answer SECURITY_DISABLED:
	// nothing to show.
	out.Can.ACLs = out.Can.ACLs && s.cfg.ACLs
	return out
}

// certificatePrincipal is the principal of r's client certificate, which
// passed the guard as an operator's ("" without one).
func (s *Server) certificatePrincipal(r *http.Request) string {
	if !s.guard.takesCredentials() || s.guard.principals == nil {
		return ""
	}
	p, _ := s.guard.principals.of(r)
	return p
}

// kafkaSideHost is the host the agent's Kafka listener sees the console's
// clients connect from, which an ACL's host is compared with: the host of
// the sign-in listener's address (the client dials it from this machine).
func (s *Server) kafkaSideHost() string {
	if s.deps.Login == nil {
		return "*"
	}
	host, _, err := net.SplitHostPort(s.deps.Login.Addr)
	if err != nil || net.ParseIP(host) == nil {
		return "*"
	}
	return host
}

// signIn is POST /v1/console/session's body.
type signIn struct {
	Username  string `json:"username"`
	Password  string `json:"password"`
	Mechanism string `json:"mechanism"`
}

// consoleSignIn serves POST /v1/console/session: it logs a Kafka client
// in as the user, checks the login with one request, and keeps the
// session under a new cookie.
func (s *Server) consoleSignIn(w http.ResponseWriter, r *http.Request) {
	var body signIn
	if !sameOriginJSON(w, r) || !decodeJSONBody(w, r, maxStateChangeBody, &body, `{"username": "alice", "password": "…", "mechanism": "SCRAM-SHA-512"}`) {
		return
	}
	login := s.deps.Login
	if login == nil {
		writeDrainJSON(w, http.StatusBadRequest, map[string]any{"error": "this agent has no SASL listener to sign in on (--listeners with SASL_PLAINTEXT or SASL_SSL); use the HTTP token"})
		return
	}
	if body.Mechanism == "" {
		body.Mechanism = "SCRAM-SHA-512"
	}
	body.Mechanism = strings.ToUpper(body.Mechanism)
	var mech sasl.Mechanism
	switch {
	case body.Username == "" || body.Password == "":
		writeDrainJSON(w, http.StatusBadRequest, map[string]any{"error": "give a username and a password"})
		return
	case !slices.Contains(login.Mechanisms, body.Mechanism):
		writeDrainJSON(w, http.StatusBadRequest, map[string]any{"error": "mechanism " + body.Mechanism + ": the listener takes " + strings.Join(login.Mechanisms, ", ")})
		return
	case body.Mechanism == "PLAIN":
		mech = plain.Auth{User: body.Username, Pass: body.Password}.AsMechanism()
	case body.Mechanism == "SCRAM-SHA-256":
		mech = scram.Auth{User: body.Username, Pass: body.Password}.AsSha256Mechanism()
	default:
		mech = scram.Auth{User: body.Username, Pass: body.Password}.AsSha512Mechanism()
	}
	select {
	case s.logins <- struct{}{}:
		defer func() { <-s.logins }()
	default:
		writeDrainJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "too many sign-ins at once; try again"})
		return
	}
	// A session's client lives for many page loads: its Metadata, which
	// the reads and the sharded admin requests use, is cached only
	// briefly, so that a topic just made shows at the next read.
	opts := []kgo.Opt{kgo.SeedBrokers(login.Addr), kgo.SASL(mech), kgo.ClientID("strata-console"), kgo.RequestRetries(1),
		kgo.MetadataMinAge(consoleMetadataMinAge)}
	if login.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(login.TLS.Clone()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		writeDrainJSON(w, http.StatusInternalServerError, map[string]any{"error": "console: Kafka client: " + err.Error()})
		return
	}
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(r.Context(), consoleLoginTimeout)
	defer cancel()
	if _, err := adm.BrokerMetadata(ctx); err != nil {
		cl.Close()
		e := admin.Refusal("sign in as "+body.Username, err, "")
		s.logger.Info("console sign-in refused", "user", body.Username, "mechanism", body.Mechanism, "remote", r.RemoteAddr, "error", e.Error())
		writeAdminError(w, e)
		return
	}
	sess := &consoleSession{id: newSessionID(), principal: "User:" + body.Username, adm: adm, close: cl.Close}
	s.sessions.add(sess)
	s.setSessionCookie(w, sess.id)
	s.logger.Info("console sign-in", "principal", sess.principal, "mechanism", body.Mechanism, "remote", r.RemoteAddr)
	writeJSON(w, s.whoIs(r, sess.id))
}

// consoleSignOut serves DELETE /v1/console/session: it ends the session,
// with the CSRF token, and deletes the cookie.
func (s *Server) consoleSignOut(w http.ResponseWriter, r *http.Request) {
	cookie := sessionCookie(r)
	if cookie == "" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !s.sessions.csrfValid(r) {
		writeCSRFRefusal(w)
		return
	}
	s.sessions.remove(cookie)
	s.setSessionCookie(w, "")
	w.WriteHeader(http.StatusNoContent)
}

// consoleAction serves POST /v1/console/actions/{name}.
func (s *Server) consoleAction(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	action, ok := admin.New(name)
	if !ok {
		writeDrainJSON(w, http.StatusNotFound, map[string]any{"error": "no console action " + name + "; the actions are " + strings.Join(admin.Names, ", ")})
		return
	}
	if !sameOriginJSON(w, r) {
		return
	}
	actor, ok := s.consoleActor(w, r, true)
	if !ok {
		return
	}
	defer actor.done()
	if !decodeJSONBody(w, r, consoleActionMaxBody, action, `{"topic": "orders"}`) {
		return
	}
	if err := action.Validate(); err != nil {
		writeAdminError(w, admin.Refusal(name, err, ""))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), consoleActionTimeout)
	defer cancel()
	result, err := action.Run(ctx, actor.adm)
	attrs := []any{"action", name, "principal", actor.principal, "via", actor.via, "remote", r.RemoteAddr, "what", action.Summary()}
	if err != nil {
		e := admin.Refusal(name, err, "")
		s.logger.Info("console action refused", append(attrs, "status", e.Status, "code", e.Code, "error", e.Error())...)
		writeAdminError(w, e)
		return
	}
	s.logger.Info("console action", attrs...)
	writeJSON(w, result)
}

// consoleRead serves GET /v1/console/admin/{name}.
func (s *Server) consoleRead(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	read, ok := admin.Reads[name]
	if !ok {
		writeDrainJSON(w, http.StatusNotFound, map[string]any{"error": "no console read " + name})
		return
	}
	actor, ok := s.consoleActor(w, r, false)
	if !ok {
		return
	}
	defer actor.done()
	ctx, cancel := context.WithTimeout(r.Context(), consoleActionTimeout)
	defer cancel()
	result, err := read(ctx, actor.adm, r.URL.Query().Get)
	if err != nil {
		writeAdminError(w, admin.Refusal(name, err, ""))
		return
	}
	writeJSON(w, result)
}

func writeAdminError(w http.ResponseWriter, e *admin.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(e)
}
