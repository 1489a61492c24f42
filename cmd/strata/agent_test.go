package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/agent"
)

// agentFlags parses args into a fresh agent config and layers the
// environment and file under them, as `strata agent` does.
func agentFlags(t *testing.T, file string, args ...string) (agent.Config, error) {
	t.Helper()
	cfg := agent.DefaultConfig()
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := layerSettings(fs, file); err != nil {
		return cfg, err
	}
	cfg.ApplyFlags(fs)
	return cfg, nil
}

func writeYAML(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "strata.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAgentSettingsPrecedence: flag over environment over file over
// default, for agent settings and topic defaults alike.
func TestAgentSettingsPrecedence(t *testing.T) {
	file := writeYAML(t, "data-dir: /from/file\nlog-flush: never\nnum-partitions: 7\nlog-retention-ms: 1000\n")
	t.Setenv("STRATA_LOG_FLUSH", "interval")
	t.Setenv("STRATA_LOG_RETENTION_MS", "2000")
	cfg, err := agentFlags(t, file, "--log-retention-ms=3000")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir != "/from/file" || cfg.NumPartitions != 7 {
		t.Errorf("from file: data-dir %q num-partitions %d", cfg.DataDir, cfg.NumPartitions)
	}
	if cfg.LogFlush != "interval" {
		t.Errorf("log-flush %q: the environment should win over the file", cfg.LogFlush)
	}
	if got := cfg.TopicDefaults["retention.ms"]; got != "3000" {
		t.Errorf("retention.ms default %q: the flag should win", got)
	}
	if _, ok := cfg.TopicDefaults["segment.bytes"]; ok {
		t.Error("an unset topic default must stay absent, so it is reported as Kafka's default")
	}
	if cfg.HTTPAddr != ":9644" {
		t.Errorf("untouched setting changed: http-addr %q", cfg.HTTPAddr)
	}
}

// TestNetworkCapacitySetting: --network-capacity takes bytes per second
// with a unit from the flag, the environment and the file alike.
func TestNetworkCapacitySetting(t *testing.T) {
	if cfg, err := agentFlags(t, ""); err != nil || cfg.NetworkCapacity != 0 {
		t.Errorf("default: %d, %v; want 0, unset", cfg.NetworkCapacity, err)
	}
	if cfg, err := agentFlags(t, writeYAML(t, "network-capacity: 1.25GB\n")); err != nil || cfg.NetworkCapacity != 1_250_000_000 {
		t.Errorf("from the file: %d, %v", cfg.NetworkCapacity, err)
	}
	t.Setenv("STRATA_NETWORK_CAPACITY", "100MiB")
	if cfg, err := agentFlags(t, ""); err != nil || cfg.NetworkCapacity != 100<<20 {
		t.Errorf("from STRATA_NETWORK_CAPACITY: %d, %v", cfg.NetworkCapacity, err)
	}
	if cfg, err := agentFlags(t, "", "--network-capacity=500MiB/s"); err != nil || cfg.NetworkCapacity != 500<<20 {
		t.Errorf("from the flag: %d, %v", cfg.NetworkCapacity, err)
	}
	t.Setenv("STRATA_NETWORK_CAPACITY", "fast")
	if _, err := agentFlags(t, ""); err == nil || !strings.Contains(err.Error(), "--network-capacity from STRATA_NETWORK_CAPACITY") {
		t.Errorf("a bad value from the environment: %v, want an error naming the flag and the variable", err)
	}
}

// TestAgentSettingsErrors: bad values name the setting and where the value
// came from.
func TestAgentSettingsErrors(t *testing.T) {
	tests := []struct {
		name, file, env, want string
	}{
		{"unknown file key", "datadir: x\n", "", `unknown setting "datadir"`},
		{"bad file value", "num-partitions: many\n", "", "--num-partitions from"},
		{"nested file value", "data-dir:\n  a: b\n", "", "data-dir: want a single value"},
		{"bad env value", "", "STRATA_AUTO_CREATE_TOPICS=perhaps", "--auto-create-topics from STRATA_AUTO_CREATE_TOPICS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.file != "" {
				file = writeYAML(t, tc.file)
			}
			if tc.env != "" {
				k, v, _ := strings.Cut(tc.env, "=")
				t.Setenv(k, v)
			}
			_, err := agentFlags(t, file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAgentRefusesBadSettings: `strata agent` with a bad value stops
// before serving, with an error that names the setting.
func TestAgentRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-flush", "sometimes"}, "--log-flush"},
		{[]string{"--log-retention-ms", "-5"}, "--log-retention-ms"},
		{[]string{"--kafka-addr", "nowhere"}, "--kafka-addr"},
		{[]string{"--store", "ftp://x"}, "--store"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--gossip-addr", "nowhere"}, "--gossip-addr"},
		{[]string{"--cost-put-per-1000=-1"}, "--cost-put-per-1000"},
		{[]string{"--cost-cross-zone-per-gb=-0.02"}, "--cost-cross-zone-per-gb"},
		{[]string{"--produce-decompression-max-bytes", "1048576"}, "--produce-decompression-max-bytes"},
		{[]string{"--network-capacity", "-100MiB"}, "--network-capacity"},
		{[]string{"--network-capacity", "1Gb"}, "--network-capacity"},
	} {
		cmd := newAgentCmd()
		// Loopback ports first; the case's own flags come later and win.
		cmd.SetArgs(append([]string{"--data-dir", t.TempDir(), "--kafka-addr=127.0.0.1:0", "--http-addr=127.0.0.1:0", "--gossip-addr=127.0.0.1:0"}, tc.args...))
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("strata agent %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
