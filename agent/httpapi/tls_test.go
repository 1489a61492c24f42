package httpapi

import (
	"context"
	"crypto/x509/pkix"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/tlsconfig"
	"github.com/strata-streaming/strata/internal/tlstest"
)

// idleHost is an agent that is ready and holds nothing.
type idleHost struct{}

var _ Host = idleHost{}

func (idleHost) Ready() bool                        { return true }
func (idleHost) Partitions() []*partition.Partition { return nil }
func (idleHost) Topics() []*dataplane.Topic         { return nil }
func (idleHost) Authorize(string, string, kmsg.ACLOperation, kmsg.ACLResourceType, string) bool {
	return false
}
func (idleHost) AuthorizeAny(string, string, kmsg.ACLOperation, kmsg.ACLResourceType) bool {
	return false
}

// serve starts a server of agent id on a loopback port with cfg, and
// stops it when the test ends.
func serve(t *testing.T, id int32, cfg Config) *Server {
	t.Helper()
	cfg.Addr, cfg.IdleTimeout, cfg.MaxConnections = "127.0.0.1:0", time.Minute, 16
	s, err := New(cfg, idleHost{}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	s.SetDeps(Deps{ID: id, StartedAt: time.Now()})
	done := make(chan error, 1)
	go func() { done <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// TestPeerCallsVerifyThePeer: with --http-tls an agent calls the others
// over HTTPS, trusting --tls-client-ca-file: a peer whose certificate that
// CA signed answers, a peer whose certificate another CA signed is not
// trusted.
func TestPeerCallsVerifyThePeer(t *testing.T) {
	ca, other := tlstest.NewCA(t, "cluster CA"), tlstest.NewCA(t, "other")
	tlsConfig := func(ca *tlstest.CA, cn string) Config {
		cert := ca.Issue(t, cn, pkix.Name{CommonName: cn})
		return Config{TLS: true, Certs: tlsconfig.Files{CertFile: cert.CertFile, KeyFile: cert.KeyFile, ClientCAFile: ca.CertFile}}
	}
	s := serve(t, 0, tlsConfig(ca, "agent-0"))
	trusted := serve(t, 1, tlsConfig(ca, "agent-1"))
	stranger := serve(t, 2, tlsConfig(other, "agent-2"))
	if l, err := s.FetchConsoleReport(t.Context(), trusted.Addr().String()); err != nil || l.AgentID != 1 {
		t.Fatalf("a call to a peer the cluster CA vouches for: %+v, %v", l, err)
	}
	if _, err := s.FetchConsoleReport(t.Context(), stranger.Addr().String()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a call to a peer with an untrusted certificate: %v", err)
	}
}
