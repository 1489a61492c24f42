package loadgen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certFiles are the PEM files of a TLS listener and its clients.
type certFiles struct {
	CAFile   string // the CA certificate: the clients' trust store
	CertFile string // the server's certificate, signed by the CA
	KeyFile  string // the server's private key (PKCS #8)
}

// certValidity is how long the harness's certificates are valid: longer
// than any run, short enough that a stray copy is soon worthless.
const certValidity = 7 * 24 * time.Hour

// writeServerCert makes a CA and a server certificate it signs, both
// ECDSA P-256, valid for 127.0.0.1, ::1 and localhost (what an agent
// advertises when no address is given), and writes them under dir.
// Clients verify the server against the CA file rather than skipping
// verification, so a run over TLS does the work a real client does.
func writeServerCert(dir string) (certFiles, error) {
	files := certFiles{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"),
		KeyFile: filepath.Join(dir, "server-key.pem")}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "strata-bench CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return files, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "strata-bench agent"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return files, fmt.Errorf("server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return files, err
	}
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{files.CAFile, "CERTIFICATE", caDER}, {files.CertFile, "CERTIFICATE", der}, {files.KeyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			return files, err
		}
	}
	return files, nil
}
