// Package tlsconfig builds the TLS settings of an agent's listeners from
// PEM files (--tls-cert-file, --tls-key-file, --tls-client-ca-file) and
// keeps them in step with the files, because cert-manager and the like
// renew certificates in place, weeks before they expire, and expect the
// server to pick the new ones up without a restart. It also maps a
// client certificate's subject to a principal name, as Kafka's
// ssl.principal.mapping.rules does (principal.go).
package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// ClientAuth is Kafka's ssl.client.auth.
type ClientAuth string

const (
	// ClientAuthNone asks no certificate of clients.
	ClientAuthNone ClientAuth = "none"
	// ClientAuthRequested asks for one and checks it against the client
	// CA when given; a client without one is let in, unauthenticated.
	ClientAuthRequested ClientAuth = "requested"
	// ClientAuthRequired refuses a client without a certificate the client
	// CA signed.
	ClientAuthRequired ClientAuth = "required"
)

// Files names the PEM files of a server's TLS settings.
type Files struct {
	// CertFile holds the certificate chain, leaf first; KeyFile its key.
	CertFile, KeyFile string
	// ClientCAFile holds the CAs that sign client certificates.
	ClientCAFile string
	// ClientAuth is ssl.client.auth; empty means none.
	ClientAuth ClientAuth
}

// Enabled reports whether a certificate is configured.
func (f Files) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" }

// Validate names the first setting that is unusable, by its flag.
func (f Files) Validate() error {
	switch {
	case f.CertFile == "" && f.KeyFile != "":
		return errors.New("--tls-key-file is set without --tls-cert-file")
	case f.CertFile != "" && f.KeyFile == "":
		return errors.New("--tls-cert-file is set without --tls-key-file")
	}
	switch f.ClientAuth {
	case "", ClientAuthNone:
	case ClientAuthRequested, ClientAuthRequired:
		if f.ClientCAFile == "" {
			return fmt.Errorf("--tls-client-auth %s needs --tls-client-ca-file, the CAs that sign client certificates", f.ClientAuth)
		}
	default:
		return fmt.Errorf("--tls-client-auth %q: want none, requested or required (ssl.client.auth)", f.ClientAuth)
	}
	if f.ClientCAFile != "" && !f.Enabled() {
		return errors.New("--tls-client-ca-file is set without --tls-cert-file and --tls-key-file")
	}
	if f.Enabled() {
		if _, err := load(f); err != nil {
			return err
		}
	}
	return nil
}

// recheckEvery bounds how often the files are looked at: at most once a
// second, on a handshake, so an idle agent does no work and a busy one one
// stat per file per second.
const recheckEvery = time.Second

// Server holds a listener's TLS settings and reloads them when the files
// change. A renewal that cannot be loaded (a key that does not match, a
// half-written file) keeps the settings in use and is logged; the next
// change is tried again.
type Server struct {
	files  Files
	logger *slog.Logger

	mu      sync.Mutex
	current *tls.Config
	stamps  [3]fileStamp
	checked time.Time
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewServer loads the files; the error names the flag of a bad one.
func NewServer(f Files, logger *slog.Logger) (*Server, error) {
	s := &Server{files: f, logger: logger}
	stamps := s.stampFiles()
	cfg, err := load(f)
	if err != nil {
		return nil, err
	}
	s.current, s.stamps, s.checked = cfg, stamps, time.Now()
	return s, nil
}

// Config is the tls.Config for a listener: each handshake gets the
// settings of the files as they are now.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.config(), nil
		},
	}
}

func (s *Server) config() *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.checked) < recheckEvery {
		return s.current
	}
	s.checked = time.Now()
	stamps := s.stampFiles()
	if stamps == s.stamps {
		return s.current
	}
	cfg, err := load(s.files)
	if err != nil {
		s.logger.Warn("TLS files changed but cannot be loaded; keeping the certificate in use", "err", err)
		s.stamps = stamps // tried; the next change tries again
		return s.current
	}
	s.current, s.stamps = cfg, stamps
	leaf := cfg.Certificates[0].Leaf
	s.logger.Info("TLS certificate reloaded", "subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	return s.current
}

func (s *Server) stampFiles() [3]fileStamp {
	var st [3]fileStamp
	for i, p := range []string{s.files.CertFile, s.files.KeyFile, s.files.ClientCAFile} {
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil {
			st[i] = fileStamp{fi.ModTime(), fi.Size()}
		}
	}
	return st
}

// load reads the files into a server tls.Config.
func load(f Files) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", f.CertFile, f.KeyFile, err)
	}
	// LoadX509KeyPair parses the leaf since Go 1.23; the reload log and
	// expiry checks read it.
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("--tls-cert-file %s: %w", f.CertFile, err)
		}
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if f.ClientCAFile != "" {
		pem, err := os.ReadFile(f.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca-file %s: no PEM certificate in it", f.ClientCAFile)
		}
		cfg.ClientCAs = pool
	}
	switch f.ClientAuth {
	case ClientAuthRequested:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// Subject is the RFC 2253 subject of the verified client certificate of a
// connection, most specific first ("CN=app,OU=eng,O=Acme"), or "" when
// the client gave none.
func Subject(st tls.ConnectionState) string {
	if len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return ""
	}
	return st.VerifiedChains[0][0].Subject.String()
}
