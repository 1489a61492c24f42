package agent

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testcert"
	"github.com/strata-streaming/strata/internal/testwait"
)

func leafName(t *testing.T, c *tls.Certificate) string {
	t.Helper()
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.Subject.CommonName
}

// TestCertReloader: a rotated certificate is served within seconds; a
// half-written one is not, and the previous one stays.
func TestCertReloader(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, dir)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca.Issue(t, "first", certFile, keyFile)
	r, err := newCertReloader(certFile, keyFile, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := r.GetCertificate(nil)
	if got := leafName(t, cert); got != "first" {
		t.Fatalf("serving %q, want first", got)
	}
	ca.Issue(t, "second", certFile, keyFile)
	testwait.Until(t, 10*time.Second, func() bool {
		cert, _ := r.GetCertificate(nil)
		return leafName(t, cert) == "second"
	}, "the rotated certificate is served")

	// A broken key file: the second certificate stays.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.checked = time.Time{} // look at the files on the next handshake
	r.mu.Unlock()
	cert, _ = r.GetCertificate(nil)
	if got := leafName(t, cert); got != "second" {
		t.Fatalf("after a broken rotation serving %q, want second", got)
	}
	if _, err := newCertReloader(certFile, keyFile, nil); err == nil {
		t.Fatal("a broken pair loaded at start")
	}
}
