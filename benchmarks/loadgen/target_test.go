package loadgen

import (
	"slices"
	"testing"
)

// TestAgentEnv: an agent the harness starts never sees the caller's STRATA_*
// settings.
func TestAgentEnv(t *testing.T) {
	got := agentEnv([]string{"PATH=/bin", "STRATA_LOG_FLUSH=never", "STRATA_KAFKA_ADDR=:1", "HOME=/root", "XSTRATA_KEEP=1"})
	want := []string{"PATH=/bin", "HOME=/root", "XSTRATA_KEEP=1"}
	if !slices.Equal(got, want) {
		t.Errorf("agentEnv = %q, want %q", got, want)
	}
}
