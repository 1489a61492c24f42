package main

import (
	"net/netip"
	"testing"
)

// TestConnectionLimitFlags: the connection limits reach the Kafka server's
// config from flags and from the environment, and bad overrides are
// refused at parse time.
func TestConnectionLimitFlags(t *testing.T) {
	t.Setenv("STRATA_MAX_CONNECTION_CREATION_RATE", "50")
	cfg, err := agentFlags(t, "", "--max-connections-per-ip=7", "--max-connections-per-ip-overrides=127.0.0.2:0,[::1]:9")
	if err != nil {
		t.Fatal(err)
	}
	k := cfg.Kafka
	if k.MaxConnectionsPerIP != 7 || k.MaxConnectionCreationRate != 50 ||
		len(k.MaxConnectionsPerIPOverrides) != 2 || k.MaxConnectionsPerIPOverrides[netip.MustParseAddr("127.0.0.2")] != 0 ||
		k.MaxConnectionsPerIPOverrides[netip.MustParseAddr("::1")] != 9 {
		t.Fatalf("kafka config %+v", k)
	}
	if _, err := agentFlags(t, "", "--max-connections-per-ip-overrides=somehost:3"); err == nil {
		t.Fatal("a host name in the overrides was accepted")
	}
}
