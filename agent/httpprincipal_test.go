package agent

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/tlstest"
)

// httpsClient is an HTTPS client trusting ca that presents cert, if any.
func httpsClient(t *testing.T, ca *tlstest.CA, cert *tlstest.Files) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: ca.Pool()}
	if cert != nil {
		pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: time.Minute}
}

// httpsDo sends method to path on a over HTTPS with client, a drain's JSON
// body on POST and token as its bearer token ("" for none), and returns
// the status and the body.
func httpsDo(t *testing.T, client *http.Client, a *running, method, path, token string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"force":true,"timeout":"1s"}`)
	}
	req, err := http.NewRequest(method, "https://"+a.HTTPAddr().String()+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// writeTokens writes an --http-token-file holding token.
func writeTokens(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "http-tokens")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHTTPPrincipalAuthorization: with --http-tls-client-auth requested and
// --authorizer acl, a drain is allowed to a certificate whose mapped
// principal has ALTER on the CLUSTER by an ACL made with kadm; a principal
// without it gets 403 and nothing drains; no credentials, or a subject no
// rule maps, get 401; /metrics, restricted by --http-require-auth-for,
// needs DESCRIBE or the token, while the probes stay open.
func TestHTTPPrincipalAuthorization(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cluster CA")
	agentCert := ca.Issue(t, "agent", pkix.Name{CommonName: "agent-0", OrganizationalUnit: []string{"agents"}})
	operator := ca.Issue(t, "operator", pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"ops"}})
	viewer := ca.Issue(t, "viewer", pkix.Name{CommonName: "Bob", OrganizationalUnit: []string{"ops"}})
	stranger := ca.Issue(t, "stranger", pkix.Name{CommonName: "mallory", OrganizationalUnit: []string{"elsewhere"}})
	const token = "aHR0cC1wcmluY2lwYWwtdGVzdC10b2tlbg"

	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket"))
	cfg.HTTPTLS, cfg.HTTPTLSClientAuth = true, "requested"
	cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile = agentCert.CertFile, agentCert.KeyFile, ca.CertFile
	cfg.SSLPrincipalMappingRules = `RULE:^CN=([^,]*),OU=(ops|agents)$/$1/L`
	// The Kafka listener is PLAINTEXT: its clients are User:ANONYMOUS,
	// made a super user so that the test can create ACLs over it.
	cfg.Authorizer, cfg.SuperUsers = "acl", "User:ANONYMOUS"
	cfg.HTTPTokenFile = writeTokens(t, token)
	cfg.HTTPRequireAuthFor = []string{"metrics"}
	a := start(t, cfg, nil)

	cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for principal, op := range map[string]kadm.ACLOperation{"User:alice": kadm.OpAlter, "User:bob": kadm.OpDescribe} {
		res, err := adm.CreateACLs(ctxT(t), kadm.NewACLs().Allow(principal).Clusters().Operations(op).ResourcePatternType(kadm.ACLPatternLiteral))
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			t.Fatalf("CreateACLs %s %v: %v", principal, op, err)
		}
	}

	none := httpsClient(t, ca, nil)
	alice, bob, mallory := httpsClient(t, ca, &operator), httpsClient(t, ca, &viewer), httpsClient(t, ca, &stranger)
	const drain = "/v1/drain"
	notDraining := func(who string) {
		t.Helper()
		if a.ctl.Draining() || !a.ready.Load() {
			t.Fatalf("after %s's refused drain the agent drains", who)
		}
	}
	if status, body := httpsDo(t, bob, a, http.MethodPost, drain, ""); status != http.StatusForbidden || !strings.Contains(body, "User:bob may not ALTER") {
		t.Errorf("drain by a principal with DESCRIBE only: %d %q, want 403", status, body)
	}
	notDraining("bob")
	if status, body := httpsDo(t, none, a, http.MethodPost, drain, ""); status != http.StatusUnauthorized {
		t.Errorf("drain without credentials: %d %q, want 401", status, body)
	}
	notDraining("a client without credentials")
	if status, body := httpsDo(t, mallory, a, http.MethodPost, drain, ""); status != http.StatusUnauthorized || !strings.Contains(body, "names no principal") {
		t.Errorf("drain by a certificate no rule maps: %d %q, want 401", status, body)
	}
	notDraining("mallory")
	if status, body := httpsDo(t, bob, a, http.MethodPost, drain, "not-the-token-but-long-enough"); status != http.StatusUnauthorized {
		t.Errorf("drain with a wrong token: %d %q, want 401", status, body)
	}
	notDraining("a wrong token")

	for _, c := range []struct {
		who    string
		client *http.Client
		token  string
		path   string
		want   int
	}{
		{"nobody", none, "", "/metrics", http.StatusUnauthorized},
		{"the token", none, token, "/metrics", http.StatusOK},
		{"bob (DESCRIBE)", bob, "", "/metrics", http.StatusOK},
		{"alice (ALTER implies DESCRIBE)", alice, "", "/metrics", http.StatusOK},
		{"nobody", none, "", "/healthz", http.StatusOK},
		{"nobody", none, "", "/readyz", http.StatusOK},
		{"nobody", none, "", "/v1/drain", http.StatusOK},
	} {
		if status, body := httpsDo(t, c.client, a, http.MethodGet, c.path, c.token); status != c.want {
			t.Errorf("GET %s by %s: %d %q, want %d", c.path, c.who, status, body, c.want)
		}
	}

	if status, body := httpsDo(t, alice, a, http.MethodPost, drain, ""); status != http.StatusOK {
		t.Fatalf("drain by a principal with ALTER on the CLUSTER: %d %q", status, body)
	}
	select {
	case <-a.done:
		a.cancel = nil
	case <-time.After(time.Minute):
		t.Fatal("a forced drain by an authorized principal did not stop the agent")
	}
}

// TestHTTPPeerCallsCarryCredentials: when the read-only pages are
// restricted too, an agent's own calls to another's HTTP port, a drain
// forwarded with ?agent= and the console's fetch of its report, pass with
// the cluster's token, or with the agent's certificate when its principal
// may ALTER the CLUSTER; a client without credentials is refused before
// anything is forwarded.
func TestHTTPPeerCallsCarryCredentials(t *testing.T) {
	const token = "cGVlci1jYWxscy1jYXJyeS10aGUtdG9rZW4"
	ca := tlstest.NewCA(t, "cluster CA")
	operator := ca.Issue(t, "operator", pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"ops"}})
	for _, c := range []struct {
		name   string
		tweak  func(i int, cfg *Config)
		client *http.Client // the operator's
		token  string
	}{
		{"token", func(_ int, cfg *Config) { cfg.HTTPTokenFile = writeTokens(t, token) }, http.DefaultClient, token},
		{"certificate", func(i int, cfg *Config) {
			cert := ca.Issue(t, fmt.Sprint("agent-", i), pkix.Name{CommonName: fmt.Sprint("agent-", i), OrganizationalUnit: []string{"agents"}})
			cfg.HTTPTLS, cfg.HTTPTLSClientAuth = true, "required"
			cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile = cert.CertFile, cert.KeyFile, ca.CertFile
			// Every agent's certificate is User:agents; the Kafka
			// listener (replication) is PLAINTEXT, User:ANONYMOUS.
			cfg.SSLPrincipalMappingRules = `RULE:^CN=[^,]*,OU=agents$/agents/,RULE:^CN=([^,]*),OU=ops$/$1/`
			cfg.Authorizer, cfg.SuperUsers = "acl", "User:ANONYMOUS;User:agents;User:alice"
		}, httpsClient(t, ca, &operator), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			i := 0
			cl := startClusterWith(t, 2, func(cfg *Config) {
				c.tweak(i, cfg)
				cfg.HTTPRequireAuthFor = []string{"pages"}
				i++
			})
			a0, a1 := cl.agents[0], cl.agents[1]
			scheme := "http" // the scheme agents call each other in
			if a0.cfg.HTTPTLS {
				scheme = "https"
			}
			do := func(client *http.Client, method, path, token string) (int, string) {
				t.Helper()
				var body io.Reader
				if method == http.MethodPost {
					body = strings.NewReader(`{"force":true,"timeout":"1s"}`)
				}
				req, _ := http.NewRequest(method, scheme+"://"+a0.HTTPAddr().String()+path, body)
				req.Header.Set("Content-Type", "application/json")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			// Without credentials the first agent refuses, whatever the
			// client presents (a certificate-less client cannot even
			// connect under "required").
			if c.token != "" {
				if status, body := do(http.DefaultClient, http.MethodPost, "/v1/drain?agent=1", ""); status != http.StatusUnauthorized {
					t.Fatalf("forwarded drain without a token: %d %q", status, body)
				}
			}
			if a1.ctl.Draining() {
				t.Fatal("agent 1 drains after a refused request")
			}
			// Bound to 127.0.0.1, agent 1's address is dialable as it is.
			if _, err := a0.http.FetchConsoleReport(ctxT(t), a1.HTTPAddr().String()); err != nil {
				t.Fatalf("the console's fetch of agent 1's restricted report: %v", err)
			}
			if status, body := do(c.client, http.MethodGet, "/v1/drain?agent=1", c.token); status != http.StatusOK {
				t.Fatalf("GET /v1/drain?agent=1, forwarded to a restricted page: %d %q", status, body)
			}
			if status, body := do(c.client, http.MethodPost, "/v1/drain?agent=1", c.token); status != http.StatusOK {
				t.Fatalf("forwarded drain: %d %q", status, body)
			}
			select {
			case <-a1.done:
				a1.cancel = nil
			case <-time.After(time.Minute):
				t.Fatal("agent 1 did not stop after a forwarded forced drain")
			}
		})
	}
}
