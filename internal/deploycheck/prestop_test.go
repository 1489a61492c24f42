package deploycheck

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/agent"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/membership"
)

// httpSettings are the agent flags that decide what the HTTP port asks of
// a drain: the preStop hook must bring what they ask for.
var httpSettings = []string{"http-tls", "http-tls-client-auth", "http-token-file", "tls-cert-file", "tls-key-file", "tls-client-ca-file"}

// runPreStop runs the manifests' preStop command, with the test's binary,
// against an agent whose HTTP port is set up as the manifests set it up
// (HTTPS, tokens; samples stand in for the Secrets' files, in the agent's
// flags and in the hook's alike), and checks that it drains and stops the
// agent. The agent is alone, so the forced drain ends at once.
func runPreStop(t *testing.T, c container, pod podSpec, manifest *pflag.FlagSet, samples *secretSamples) {
	t.Helper()
	dir := t.TempDir()
	cfg := agent.DefaultConfig()
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	cfg.RegisterFlags(fs)
	for _, name := range httpSettings {
		if err := fs.Set(name, manifest.Lookup(name).Value.String()); err != nil {
			t.Fatalf("--%s: %v", name, err)
		}
	}
	cfg.HTTPRequireAuthFor, _ = manifest.GetStringSlice("http-require-auth-for")
	cfg.DataDir, cfg.Store = filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "store")
	cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Gossip = membership.LoopbackConfig()
	a, err := agent.New(context.Background(), cfg, agent.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("an agent with the manifests' HTTP settings: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	if c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil || len(c.Lifecycle.PreStop.Exec.Command) == 0 {
		t.Fatal("no preStop exec hook")
	}
	cmd := slices.Clone(c.Lifecycle.PreStop.Exec.Command)
	cmd[0] = testagent.Build(t)
	for i, arg := range cmd {
		name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if name == "http" {
			cmd[i] = "--http=" + a.HTTPAddr().String()
		} else if ref, ok := secretFile(c, pod, value); ok {
			cmd[i] = "--" + name + "=" + samples.sampleFile(t, ref)
		}
	}
	run, stop := context.WithTimeout(context.Background(), 2*conditionLimit)
	defer stop()
	out, err := exec.CommandContext(run, cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the agent has stopped") {
		t.Fatalf("preStop %q: %v\n%s", cmd[1:], err, out)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the agent after the preStop drain: %v", err)
		}
	case <-time.After(conditionLimit):
		t.Fatal("the agent still runs after the preStop command returned")
	}
}
