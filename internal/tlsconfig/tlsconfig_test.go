package tlsconfig_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/internal/tlsconfig"
	"github.com/strata-streaming/strata/internal/tlstest"
)

// serve accepts TLS connections on loopback until the test ends; each one
// completes its handshake and sends the client's certificate subject.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				if tc.Handshake() == nil {
					tc.Write([]byte(tlsconfig.Subject(tc.ConnectionState()) + "\n"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// dial handshakes with addr and returns the server's certificate subject
// and what the server said of the client.
func dial(addr string, cfg *tls.Config) (server, client string, err error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 256)
	n, err := c.Read(buf)
	if err != nil {
		return "", "", err
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName, strings.TrimSpace(string(buf[:n])), nil
}

// TestCertificateReloaded: a certificate renewed in place is served by
// the next handshakes without a restart; a renewal that does not load
// keeps the certificate in use.
func TestCertificateReloaded(t *testing.T) {
	ca := tlstest.NewCA(t, "test CA")
	f := ca.Issue(t, "server", pkix.Name{CommonName: "agent-first"})
	var logs bytes.Buffer
	s, err := tlsconfig.NewServer(tlsconfig.Files{CertFile: f.CertFile, KeyFile: f.KeyFile}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	client := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	if cn, _, err := dial(addr, client); err != nil || cn != "agent-first" {
		t.Fatalf("first handshake: %q, %v", cn, err)
	}

	ca.Issue(t, "server", pkix.Name{CommonName: "agent-renewed"})
	testwait.Until(t, 10*time.Second, func() bool {
		cn, _, err := dial(addr, client)
		return err == nil && cn == "agent-renewed"
	}, "the renewed certificate served")

	// A key that is not the certificate's: refused, the renewed one stays.
	other := ca.Issue(t, "other", pkix.Name{CommonName: "other"})
	key, _ := os.ReadFile(other.KeyFile)
	if err := os.WriteFile(f.KeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	// Files are looked at on handshakes, at most once a second.
	testwait.Until(t, 10*time.Second, func() bool {
		dial(addr, client)
		return strings.Contains(logs.String(), "cannot be loaded")
	}, "the bad renewal logged")
	if cn, _, err := dial(addr, client); err != nil || cn != "agent-renewed" {
		t.Fatalf("after a bad renewal: %q, %v", cn, err)
	}
}

// TestClientAuth: ssl.client.auth=required refuses a client without a
// certificate, or with one another CA signed, and names the subject of a
// good one; requested lets a client without one in.
func TestClientAuth(t *testing.T) {
	ca := tlstest.NewCA(t, "client CA")
	server := ca.Issue(t, "server", pkix.Name{CommonName: "agent"})
	good := ca.Issue(t, "good", pkix.Name{CommonName: "billing", OrganizationalUnit: []string{"apps"}, Organization: []string{"Acme"}})
	stranger := tlstest.NewCA(t, "stranger CA").Issue(t, "bad", pkix.Name{CommonName: "billing"})
	// sending sends f's certificate whatever CAs the server names, as a
	// client that does not look would.
	sending := func(f tlstest.Files) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	for _, auth := range []tlsconfig.ClientAuth{tlsconfig.ClientAuthRequired, tlsconfig.ClientAuthRequested} {
		s, err := tlsconfig.NewServer(tlsconfig.Files{CertFile: server.CertFile, KeyFile: server.KeyFile, ClientCAFile: ca.CertFile, ClientAuth: auth}, slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		addr := serve(t, s.Config())
		base := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}

		withGood := base.Clone()
		withGood.GetClientCertificate = sending(good)
		if _, subject, err := dial(addr, withGood); err != nil || subject != "CN=billing,OU=apps,O=Acme" {
			t.Errorf("%s, a good certificate: subject %q, %v", auth, subject, err)
		}
		withBad := base.Clone()
		withBad.GetClientCertificate = sending(stranger)
		if _, _, err := dial(addr, withBad); err == nil {
			t.Errorf("%s: a certificate of another CA was accepted", auth)
		}
		_, subject, err := dial(addr, base)
		if auth == tlsconfig.ClientAuthRequired && err == nil {
			t.Errorf("required: a client without a certificate was accepted")
		}
		if auth == tlsconfig.ClientAuthRequested && (err != nil || subject != "") {
			t.Errorf("requested, no certificate: subject %q, %v; want let in unauthenticated", subject, err)
		}
	}
}

func TestFilesValidate(t *testing.T) {
	ca := tlstest.NewCA(t, "CA")
	f := ca.Issue(t, "server", pkix.Name{CommonName: "agent"})
	for _, tc := range []struct {
		files tlsconfig.Files
		want  string
	}{
		{tlsconfig.Files{CertFile: f.CertFile}, "without --tls-key-file"},
		{tlsconfig.Files{KeyFile: f.KeyFile}, "without --tls-cert-file"},
		{tlsconfig.Files{CertFile: f.CertFile, KeyFile: f.KeyFile, ClientAuth: "required"}, "needs --tls-client-ca-file"},
		{tlsconfig.Files{CertFile: f.CertFile, KeyFile: f.KeyFile, ClientAuth: "yes"}, "want none, requested or required"},
		{tlsconfig.Files{CertFile: f.CertFile, KeyFile: ca.CertFile}, "--tls-cert-file"},
		{tlsconfig.Files{CertFile: f.CertFile, KeyFile: f.KeyFile, ClientCAFile: f.KeyFile, ClientAuth: "required"}, "no PEM certificate"},
		{tlsconfig.Files{ClientCAFile: ca.CertFile}, "without --tls-cert-file"},
	} {
		err := tc.files.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.files, err, tc.want)
		}
	}
	if err := (tlsconfig.Files{CertFile: f.CertFile, KeyFile: f.KeyFile, ClientCAFile: ca.CertFile, ClientAuth: "required"}).Validate(); err != nil {
		t.Errorf("good files: %v", err)
	}
}
