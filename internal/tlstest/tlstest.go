// Package tlstest makes certificate authorities and certificates for tests
// of TLS listeners, written as the PEM files an agent and its clients
// (kcat, librdkafka, franz-go) are given.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CA is a certificate authority of a test.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the CA certificate as PEM, for a client's or server's
	// trust store.
	CertFile string
	dir      string
}

// Files are a certificate and its key as PEM files.
type Files struct {
	CertFile, KeyFile string
	Cert              *x509.Certificate
}

// NewCA makes a CA named cn whose files live in a temp dir of t.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Strata tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	dir := t.TempDir()
	ca := &CA{Cert: cert, key: key, dir: dir, CertFile: filepath.Join(dir, "ca.pem")}
	writePEM(t, ca.CertFile, "CERTIFICATE", der)
	return ca
}

// Issue makes a certificate for subject, valid as a server for
// 127.0.0.1, ::1 and localhost, and as a client, written under name.
func (ca *CA) Issue(t testing.TB, name string, subject pkix.Name) Files {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	f := Files{CertFile: filepath.Join(ca.dir, name+".pem"), KeyFile: filepath.Join(ca.dir, name+"-key.pem"), Cert: cert}
	writePEM(t, f.CertFile, "CERTIFICATE", der)
	writePEM(t, f.KeyFile, "PRIVATE KEY", keyDER)
	return f
}

// Pool is a pool holding the CA, for a Go client's RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// writePEM replaces path with one PEM block, through a rename so that a
// reader never sees half of it.
func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
