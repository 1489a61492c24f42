package agent

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/internal/tlstest"
)

// TestHTTPTLS: with --http-tls the HTTP port speaks only TLS with the
// agent's certificate, a client that trusts its CA gets the pages, and the
// agent's own calls to other agents (the console's fetch of its report)
// go over HTTPS.
func TestHTTPTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cluster CA")
	cert := ca.Issue(t, "agent", pkix.Name{CommonName: "agent-0"})
	cfg := tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket"))
	cfg.HTTPTLS = true
	cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile = cert.CertFile, cert.KeyFile, ca.CertFile
	a := start(t, cfg, nil)
	addr := a.HTTPAddr().String()

	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP answered on a TLS port")
		}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	resp, err := client.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.TLS.PeerCertificates[0].Subject.CommonName != "agent-0" {
		t.Fatalf("GET https /healthz: %s", resp.Status)
	}
	if _, err := a.http.FetchConsoleReport(t.Context(), addr); err != nil {
		t.Fatalf("the agent's own HTTPS call to an agent: %v", err)
	}
	// That a peer whose certificate another CA signed is not trusted is
	// agent/httpapi's TestPeerCallsVerifyThePeer.
}

func TestHTTPTLSNeedsCertificate(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.HTTPTLS = true
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--http-tls needs --tls-cert-file") {
		t.Fatalf("--http-tls without a certificate: %v", err)
	}
}
