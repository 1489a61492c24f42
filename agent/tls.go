package agent

// TLS for SSL and SASL_SSL listeners (docs/security.md): one certificate
// and key (--tls-cert-file, --tls-key-file), re-read when either file
// changes so that a rotation (cert-manager rewrites the files of a mounted
// secret) applies to new connections without a restart. Client
// certificates (mTLS) are not asked for yet.

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certCheckInterval bounds how often a handshake stats the files: a
// rotation applies within this long, and a flood of handshakes costs at
// most one pair of stats per interval.
const certCheckInterval = time.Second

// certReloader hands the current certificate to TLS handshakes.
type certReloader struct {
	certFile, keyFile string
	logger            *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamps  [2]fileStamp
	checked time.Time
}

// fileStamp is what tells a rewritten file apart.
type fileStamp struct {
	size    int64
	modTime time.Time
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), modTime: fi.ModTime()}, nil
}

// newCertReloader loads the pair once; a bad pair stops the agent at start.
func newCertReloader(certFile, keyFile string, logger *slog.Logger) (*certReloader, error) {
	r := &certReloader{certFile: certFile, keyFile: keyFile, logger: logger}
	if err := r.load(); err != nil {
		return nil, err
	}
	r.checked = time.Now()
	return r, nil
}

// load reads both files; the caller holds mu or owns r.
func (r *certReloader) load() error {
	var stamps [2]fileStamp
	for i, p := range []string{r.certFile, r.keyFile} {
		st, err := stampOf(p)
		if err != nil {
			return fmt.Errorf("--tls-cert-file/--tls-key-file: %w", err)
		}
		stamps[i] = st
	}
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file %s, --tls-key-file %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.stamps = &cert, stamps
	return nil
}

// GetCertificate is tls.Config's hook: the loaded pair, re-read first if
// a file changed since the last look. A pair that fails to load (a
// rotation caught half-written) keeps the previous one until the next look.
func (r *certReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= certCheckInterval {
		r.checked = now
		changed := false
		for i, p := range []string{r.certFile, r.keyFile} {
			if st, err := stampOf(p); err != nil || st != r.stamps[i] {
				changed = true
			}
		}
		if changed {
			if err := r.load(); err != nil {
				r.logger.Warn("TLS certificate changed but does not load; keeping the previous one", "err", err)
			} else {
				r.logger.Info("TLS certificate reloaded", "cert_file", r.certFile)
			}
		}
	}
	return r.cert, nil
}

// serverTLS is the TLS configuration of the agent's TLS listeners.
func (r *certReloader) serverTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: r.GetCertificate}
}
