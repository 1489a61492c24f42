package main

import (
	"context"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent"
	"github.com/strata-streaming/strata/internal/tlstest"
	"github.com/strata-streaming/strata/membership"
)

// TestAgentDrainCommand: `strata agent drain --force --wait` stops a real
// agent through its HTTP API, which admits only a JSON body
// (agent/httpapi/drain.go); a request the agent refused would leave it running.
func TestAgentDrainCommand(t *testing.T) {
	a, done := startDrainAgent(t, nil)
	out, _, err := runCLI(t, "", "agent", "drain", "--http", a.HTTPAddr().String(), "--force", "--wait", "--drain-timeout", "10s", "--timeout", "2m")
	if err != nil || !strings.Contains(out, "drained") {
		t.Fatalf("drain: %q, %v", out, err)
	}
	waitStopped(t, done)
}

// TestAgentDrainCommandHTTPS: the command drains an agent with --http-tls
// over HTTPS, presenting a client certificate whose principal is a super
// user; without the certificate it is refused and the agent keeps running.
// `tiering status` reads the agent's restricted pages the same way.
func TestAgentDrainCommandHTTPS(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster CA")
	server := ca.Issue(t, "agent", pkix.Name{CommonName: "agent-0"})
	ops := ca.Issue(t, "ops", pkix.Name{CommonName: "ops"})
	a, done := startDrainAgent(t, func(cfg *agent.Config) {
		cfg.HTTPTLS, cfg.HTTPTLSClientAuth = true, "requested"
		cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile = server.CertFile, server.KeyFile, ca.CertFile
		cfg.SSLPrincipalMappingRules = "RULE:^CN=(.*)$/$1/"
		cfg.Authorizer, cfg.SuperUsers = "acl", "User:ops"
		cfg.HTTPRequireAuthFor = []string{"pages"}
	})
	tiering := []string{"tiering", "status", "--http", a.HTTPAddr().String(), "--tls-ca-file", ca.CertFile}
	if _, _, err := runCLI(t, "", tiering...); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("tiering status without a certificate: %v; want a 401", err)
	}
	if out, _, err := runCLI(t, "", append(tiering, "--tls-cert-file", ops.CertFile, "--tls-key-file", ops.KeyFile)...); err != nil || !strings.Contains(out, "TOPIC") {
		t.Errorf("tiering status with a certificate: %q, %v", out, err)
	}
	args := []string{"agent", "drain", "--http", a.HTTPAddr().String(), "--tls-ca-file", ca.CertFile, "--force", "--wait", "--drain-timeout", "10s", "--timeout", "2m"}
	if out, _, err := runCLI(t, "", args...); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("drain without a certificate: %q, %v; want a 401", out, err)
	}
	select {
	case err := <-done:
		t.Fatalf("the agent stopped after a refused drain: %v", err)
	default:
	}
	out, _, err := runCLI(t, "", append(args, "--tls-cert-file", ops.CertFile, "--tls-key-file", ops.KeyFile)...)
	if err != nil || !strings.Contains(out, "drained") {
		t.Fatalf("drain: %q, %v", out, err)
	}
	waitStopped(t, done)
}

// startDrainAgent runs an agent on loopback, with tweak's settings, until
// the test ends or it stops; done receives Run's result.
func startDrainAgent(t *testing.T, tweak func(*agent.Config)) (*agent.Agent, chan error) {
	t.Helper()
	dir := t.TempDir()
	cfg := agent.DefaultConfig()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Store = "file://" + filepath.Join(dir, "store")
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Gossip = membership.LoopbackConfig()
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := agent.New(context.Background(), cfg, agent.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, done
}

func waitStopped(t *testing.T, done chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after a drain: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the agent still runs after the drain command returned")
	}
}
