package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/agent"
	"github.com/strata-streaming/strata/membership"
)

// TestQuotaFlags: flag combinations refused before any connection (the
// bootstrap address reaches nothing).
func TestQuotaFlags(t *testing.T) {
	nowhere := []string{"--bootstrap", "192.0.2.1:9092", "--timeout", "1h"}
	for _, tc := range []struct {
		args []string
		want error
	}{
		{[]string{"quota", "alter", "--add-config", "producer_byte_rate=1"}, errQuotaNoEntity},
		{[]string{"quota", "alter", "--user", "alice"}, errQuotaNothing},
		{[]string{"quota", "alter", "--user", "alice", "--user-defaults", "--add-config", "producer_byte_rate=1"}, errQuotaTwoNames},
		{[]string{"quota", "alter", "--user", "alice", "--add-config", "producer_byte_rate=fast"}, errQuotaBadValue},
		{[]string{"quota", "alter", "--user", "alice", "--add-config", "producer_byte_rate"}, errBadKeyValue},
		{[]string{"quota", "alter", "--user", "alice", "--add-config", "producer_byte_rate=1", "--delete-config", "producer_byte_rate"}, errQuotaDuplicate},
		{[]string{"quota", "describe", "--client", "a", "--client-defaults"}, errQuotaTwoNames},
	} {
		_, _, err := runCLI(t, "", append(tc.args, nowhere...)...)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestQuotaCommands: `strata quota` sets, shows, validates and removes
// quotas on a real agent.
func TestQuotaCommands(t *testing.T) {
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
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	quota := func(args ...string) string {
		t.Helper()
		out, stderr, err := runCLI(t, "", append(append([]string{"quota"}, args...), "--bootstrap", a.KafkaAddr().String(), "--timeout", "30s")...)
		if err != nil {
			t.Fatalf("strata quota %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out
	}

	quota("alter", "--user", "alice", "--client-defaults", "--add-config", "producer_byte_rate=1048576,request_percentage=12.5")
	quota("alter", "--client", "app", "--add-config", "consumer_byte_rate=2097152", "--validate-only")
	out := quota("describe")
	for _, want := range []string{"user=alice,client-id=<default>  producer_byte_rate  1048576", "user=alice,client-id=<default>  request_percentage  12.5"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "app") {
		t.Errorf("--validate-only stored a quota:\n%s", out)
	}
	if out := quota("describe", "--user", "alice", "--strict"); strings.Contains(out, "alice") {
		t.Errorf("strict describe of user=alice alone lists her client-id entity:\n%s", out)
	}
	quota("alter", "--user", "alice", "--client-defaults", "--delete-config", "producer_byte_rate,request_percentage")
	if out := quota("describe"); strings.Contains(out, "alice") {
		t.Errorf("quotas still listed after --delete-config:\n%s", out)
	}
	// The cluster's refusal reaches the exit status.
	_, _, err = runCLI(t, "", "quota", "alter", "--user", "bob", "--add-config", "bogus_rate=1", "--bootstrap", a.KafkaAddr().String())
	if err == nil || !strings.Contains(err.Error(), "bogus_rate") {
		t.Errorf("unknown key: %v, want the cluster's INVALID_REQUEST naming it", err)
	}
}
