package httpapi

// HTTPS on the HTTP port (--http-tls). The port carries drain requests and
// their bearer tokens (auth.go), so on a shared network it is served
// over TLS with the agent's certificate (--tls-cert-file, --tls-key-file,
// reloaded when renewed). Agents call each other's HTTP ports (forwarded
// drains, the console's view of the cluster) over HTTPS too, trusting the
// CAs of --tls-client-ca-file (Kafka's truststore plays the same double
// part) or, without it, the system's. A cluster turns HTTPS on for all its
// agents at once: an agent asks the others in its own scheme.
//
// Client certificates are asked only with --http-tls-client-auth (its
// "requested" leaves Prometheus and the kubelet's probes, which carry
// none, their way in); a certificate's principal may then authorize
// requests (auth.go). An agent presents its own certificate when
// another asks, so that its forwarded drains and console fetches pass.

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// peerHTTPTimeout bounds an agent's call to another agent's HTTP port.
const peerHTTPTimeout = 10 * time.Second

// setupHTTPTLS wraps the bound HTTP listener in TLS when --http-tls is set,
// and makes the client and scheme this agent calls the others with.
func (s *Server) setupHTTPTLS() error {
	s.peerClient = &http.Client{
		Timeout: peerHTTPTimeout,
		// A redirect would take a request somewhere peerHTTPAddr did not
		// check.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.scheme = "http"
	if !s.cfg.TLS {
		return nil
	}
	files := tlsconfig.Files{CertFile: s.cfg.Certs.CertFile, KeyFile: s.cfg.Certs.KeyFile}
	if auth := s.cfg.TLSClientAuth; auth != "" && auth != tlsconfig.ClientAuthNone {
		files.ClientCAFile, files.ClientAuth = s.cfg.Certs.ClientCAFile, auth
	}
	srv, err := tlsconfig.NewServer(files, s.logger.With("listener", "http"))
	if err != nil {
		return fmt.Errorf("--http-tls: %w", err)
	}
	s.ln = tls.NewListener(s.ln, srv.Config())
	trust := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.cfg.Certs.ClientCAFile != "" {
		pem, err := os.ReadFile(s.cfg.Certs.ClientCAFile)
		if err != nil {
			return fmt.Errorf("--tls-client-ca-file: %w", err)
		}
		trust.RootCAs = x509.NewCertPool()
		if !trust.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-client-ca-file %s: no PEM certificate in it", s.cfg.Certs.ClientCAFile)
		}
	}
	// Read at each handshake that asks for it, so a renewed certificate
	// is presented.
	cert, key := s.cfg.Certs.CertFile, s.cfg.Certs.KeyFile
	trust.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		pair, err := tls.LoadX509KeyPair(cert, key)
		return &pair, err
	}
	s.peerClient.Transport = &http.Transport{TLSClientConfig: trust, TLSHandshakeTimeout: peerHTTPTimeout}
	s.scheme = "https"
	return nil
}
