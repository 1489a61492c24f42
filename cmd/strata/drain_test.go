package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent"
	"github.com/strata-streaming/strata/membership"
)

// TestAgentDrainCommand: `strata agent drain --force --wait` stops a real
// agent through its HTTP API, which admits only a JSON body
// (agent/drain_http.go); a request the agent refused would leave it running.
func TestAgentDrainCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := agent.DefaultConfig()
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.Store = "file://" + filepath.Join(dir, "store")
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Gossip = membership.LoopbackConfig()
	a, err := agent.New(context.Background(), cfg, agent.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	out, _, err := runCLI(t, "", "agent", "drain", "--http", a.HTTPAddr().String(), "--force", "--wait", "--drain-timeout", "10s", "--timeout", "2m")
	if err != nil || !strings.Contains(out, "drained") {
		t.Fatalf("drain: %q, %v", out, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after a drain: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the agent still runs after the drain command returned")
	}
}
