package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/secretfile"
	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// TestHTTPGuardAnswers: who gets through, and 401 or 403 for the rest,
// with a token file and certificate principals (ops may ALTER the
// CLUSTER, viewer may DESCRIBE it), and without principals.
func TestHTTPGuardAnswers(t *testing.T) {
	const token = "dGFibGUtdGVzdC10b2tlbi1mb3ItdGhlLWd1YXJk"
	tokens := &httpTokens{}
	if err := tokens.set([]secretfile.Line{{Number: 1, Text: token}}); err != nil {
		t.Fatal(err)
	}
	mapper, err := tlsconfig.ParsePrincipalRules(`RULE:^CN=([^,]*),OU=staff$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	// ops may ALTER the CLUSTER, viewer DESCRIBE it; reader may READ the
	// topic "orders" only.
	acls := func(principal, _ string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
		if typ == kmsg.ACLResourceTypeTopic {
			return principal == "User:reader" && op == kmsg.ACLOperationRead && name == "orders"
		}
		if typ != kmsg.ACLResourceTypeCluster || name != acl.ClusterName {
			return false
		}
		return principal == "User:ops" || principal == "User:viewer" && op == kmsg.ACLOperationDescribe
	}
	withPrincipals := &httpGuard{tokens: tokens, principals: &httpPrincipals{mapper: mapper, authorize: acls}, restricted: map[pathGroup]bool{pathsMetrics: true, pathsRecords: true}}
	tokensOnly := &httpGuard{tokens: tokens, restricted: map[pathGroup]bool{}}
	request := func(method, path, cn, bearer string) *http.Request {
		r := httptest.NewRequest(method, path, nil)
		if cn != "" {
			subject := pkix.Name{CommonName: cn, OrganizationalUnit: []string{"staff"}}
			if cn == "unmapped" {
				subject.OrganizationalUnit = []string{"elsewhere"}
			}
			r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: subject}}}}
		}
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		return r
	}
	for _, c := range []struct {
		name  string
		guard *httpGuard
		r     *http.Request
		want  int // 0: passes
	}{
		{"token drains", withPrincipals, request("POST", "/v1/drain", "", token), 0},
		{"ALTER drains", withPrincipals, request("POST", "/v1/drain", "ops", ""), 0},
		{"DESCRIBE only", withPrincipals, request("POST", "/v1/drain", "viewer", ""), http.StatusForbidden},
		{"no ACL", withPrincipals, request("POST", "/v1/drain", "nobody", ""), http.StatusForbidden},
		{"no credentials", withPrincipals, request("POST", "/v1/drain", "", ""), http.StatusUnauthorized},
		{"wrong token", withPrincipals, request("POST", "/v1/drain", "", "wrong-token-of-enough-length"), http.StatusUnauthorized},
		{"wrong token, refused principal", withPrincipals, request("POST", "/v1/drain", "viewer", "wrong-token-of-enough-length"), http.StatusUnauthorized},
		{"wrong token, allowed principal", withPrincipals, request("POST", "/v1/drain", "ops", "wrong-token-of-enough-length"), 0},
		{"unmapped subject", withPrincipals, request("POST", "/v1/drain", "unmapped", ""), http.StatusUnauthorized},
		{"profiles need ALTER", withPrincipals, request("GET", "/debug/pprof/heap", "viewer", ""), http.StatusForbidden},
		{"restricted read, DESCRIBE", withPrincipals, request("GET", "/metrics", "viewer", ""), 0},
		{"restricted read, nobody", withPrincipals, request("GET", "/metrics", "", ""), http.StatusUnauthorized},
		{"open read", withPrincipals, request("GET", "/healthz", "", ""), 0},
		{"records, READ on the topic", withPrincipals, request("GET", "/v1/console/records?topic=orders", "reader", ""), 0},
		{"records, another topic", withPrincipals, request("GET", "/v1/console/records?topic=payments", "reader", ""), http.StatusForbidden},
		{"records, CLUSTER ALTER is not READ", withPrincipals, request("GET", "/v1/console/records?topic=orders", "ops", ""), http.StatusForbidden},
		{"records, token", withPrincipals, request("GET", "/v1/console/records?topic=payments", "", token), 0},
		{"records, nobody", withPrincipals, request("GET", "/v1/console/records?topic=orders", "", ""), http.StatusUnauthorized},
		{"certificate without an authorizer", tokensOnly, request("POST", "/v1/drain", "ops", ""), http.StatusUnauthorized},
		{"token without an authorizer", tokensOnly, request("POST", "/v1/drain", "", token), 0},
	} {
		got := 0
		if e := c.guard.check(c.r); e != nil {
			got = e.status
		}
		if got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	e := withPrincipals.check(request("GET", "/v1/console/records?topic=payments", "reader", ""))
	if e == nil || !strings.Contains(e.msg, `User:reader may not READ the TOPIC "payments"`) || !strings.Contains(e.msg, "--operation read --topic payments") {
		t.Errorf("a refused read of records answers %+v; want it to name the principal, the topic and the grant", e)
	}
}

// TestChangesRefusedWithACLsAndNoCredentials: an agent with --authorizer
// acl whose HTTP port takes no credentials answers a drain, and any other
// request that changes state, 401 with a message naming the flags, and
// the handler never runs; reads and profiles pass as before. The opt-out
// flag, credentials, or no authorizer give the old behaviour.
func TestChangesRefusedWithACLsAndNoCredentials(t *testing.T) {
	drain := func() *http.Request {
		r := httptest.NewRequest("POST", "/v1/drain", strings.NewReader(`{"force":true}`))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	for _, c := range []struct {
		name     string
		cfg      Config
		r        *http.Request
		want     int // 0: the handler runs
		mentions []string
	}{
		{"drain, ACLs", Config{ACLs: true}, drain(), http.StatusUnauthorized, []string{"--http-token-file", "--http-allow-unauthenticated-changes", "--authorizer acl"}},
		{"DELETE, ACLs", Config{ACLs: true}, httptest.NewRequest("DELETE", "/v1/anything", nil), http.StatusUnauthorized, nil},
		{"read, ACLs", Config{ACLs: true}, httptest.NewRequest("GET", "/v1/drain", nil), 0, nil},
		{"HEAD, ACLs", Config{ACLs: true}, httptest.NewRequest("HEAD", "/v1/console", nil), 0, nil},
		{"profile, ACLs", Config{ACLs: true, Pprof: true}, httptest.NewRequest("GET", "/debug/pprof/heap", nil), 0, nil},
		{"drain, ACLs, opted out", Config{ACLs: true, AllowUnauthenticatedChanges: true}, drain(), 0, nil},
		{"drain, no authorizer", Config{}, drain(), 0, nil},
		{"records, ACLs", Config{ACLs: true}, httptest.NewRequest("GET", "/v1/console/records?topic=t", nil), http.StatusUnauthorized, []string{"--http-token-file", "READ"}},
		{"records, ACLs, changes opted in", Config{ACLs: true, AllowUnauthenticatedChanges: true}, httptest.NewRequest("GET", "/v1/console/records?topic=t", nil), http.StatusUnauthorized, nil},
		{"records, no authorizer", Config{}, httptest.NewRequest("GET", "/v1/console/records?topic=t", nil), 0, nil},
	} {
		s := newTestServer(t, c.cfg, prometheus.NewRegistry())
		ran := false
		h := s.newHTTPGuard().wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, c.r)
		got := 0
		if !ran {
			got = w.Code
		}
		if got != c.want {
			t.Errorf("%s: %d, want %d (0: the handler runs)", c.name, got, c.want)
		}
		for _, m := range c.mentions {
			if !strings.Contains(w.Body.String(), m) {
				t.Errorf("%s: the answer %q does not name %s", c.name, w.Body.String(), m)
			}
		}
	}
	// With a token file or certificate principals, the credentials decide,
	// as before.
	for _, cfg := range []Config{{ACLs: true, TokenFile: "tokens"}, {ACLs: true, TLS: true, TLSClientAuth: "requested"}} {
		if cfg.refusesChanges() {
			t.Errorf("%+v refuses every change", cfg)
		}
	}
}

// fakeHost is an agent with no partitions and the topics given.
type fakeHost struct{ topics []*dataplane.Topic }

func (fakeHost) Ready() bool                        { return true }
func (fakeHost) Partitions() []*partition.Partition { return nil }
func (h fakeHost) Topics() []*dataplane.Topic       { return h.topics }
func (fakeHost) Authorize(string, string, kmsg.ACLOperation, kmsg.ACLResourceType, string) bool {
	return false
}
func (fakeHost) AuthorizeAny(string, string, kmsg.ACLOperation, kmsg.ACLResourceType) bool {
	return false
}

var quiet = slog.New(slog.DiscardHandler)

// newTestServer is agent 3's server, with an internal topic and "t".
func newTestServer(t *testing.T, cfg Config, reg *prometheus.Registry) *Server {
	t.Helper()
	s, err := New(cfg, fakeHost{topics: []*dataplane.Topic{{Name: "__consumer_offsets", Internal: true}, {Name: "t"}}}, quiet, reg)
	if err != nil {
		t.Fatal(err)
	}
	s.SetDeps(Deps{ID: 3, StartedAt: time.Now()})
	return s
}
