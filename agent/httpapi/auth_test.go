package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
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
	acls := func(principal, _ string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
		if typ != kmsg.ACLResourceTypeCluster || name != acl.ClusterName {
			return false
		}
		return principal == "User:ops" || principal == "User:viewer" && op == kmsg.ACLOperationDescribe
	}
	withPrincipals := &httpGuard{tokens: tokens, principals: &httpPrincipals{mapper: mapper, authorize: acls}, restricted: map[pathGroup]bool{pathsMetrics: true}}
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
}
