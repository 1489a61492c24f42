package agent

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/metricstext"
)

// scrapeMetrics reads agent a's /metrics as Prometheus would.
func scrapeMetrics(t *testing.T, a *running) metricstext.Families {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metricstext.Scrape(ctx, "http://"+a.HTTPAddr().String()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestNetworkUtilizationGauges: records produced at a known rate to a
// partition with two replicas show in strata_agent_network_bytes_per_second
// as the leader's produce plus its followers' copies (about twice the
// rate) and the follower's copies (about the rate), and
// strata_agent_utilization_ratio is that over --network-capacity. An
// agent without --network-capacity exports no ratio at all.
func TestNetworkUtilizationGauges(t *testing.T) {
	const capacity = 1 << 20 // bytes per second
	c := startClusterWith(t, 2, func(cfg *Config) { cfg.NetworkCapacity = capacity })
	created := time.Now() // the replicas' meters start after this
	c.create("load", 1, 2, nil)
	leader := c.leaderOf("load", 0)
	follower := 1 - leader
	cl := c.agents[leader].client(t)

	// 16 KiB every 50 ms for 3 s: about 330 KB/s, a third of the
	// capacity on the follower and two thirds on the leader. Each produce
	// waits for acks=all, so the follower has copied every batch when the
	// loop ends.
	value := strings.Repeat("v", 16<<10)
	batchBytes := len(recordBatch(t, value))
	const batches = 60
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	first := time.Now()
	for range batches {
		<-tick.C
		if code, _ := produceRaw(t, cl, "load", 0, value); code != 0 {
			t.Fatalf("produce: error code %d", code)
		}
	}
	last := time.Now()
	produced := float64(batches * batchBytes)

	for _, tc := range []struct {
		name  string
		agent int
		// times is how many times the produced bytes cross this agent:
		// the leader takes them in and sends them to its follower.
		times float64
	}{{"leader", leader, 2}, {"follower", follower, 1}} {
		m := scrapeMetrics(t, c.agents[tc.agent])
		scraped := time.Now()
		network, okNetwork := m.Series("strata_agent_network_bytes_per_second")
		ratio, okRatio := m.Series("strata_agent_utilization_ratio")
		in, _ := m.Series("strata_agent_in_bytes_per_second")
		out, _ := m.Series("strata_agent_out_bytes_per_second")
		if !okNetwork || !okRatio {
			t.Fatalf("%s: network %v (present %v), utilization %v (present %v)", tc.name, network, okNetwork, ratio, okRatio)
		}
		t.Logf("%s: in %.0f B/s, out %.0f B/s, network %.0f B/s, utilization %.3f; produced %.0f B in %v",
			tc.name, in, out, network, ratio, produced, last.Sub(first).Round(time.Millisecond))
		// One scrape's numbers add up exactly.
		if math.Abs(network-(in+out)) > 1e-9*network {
			t.Errorf("%s: network %v is not in %v + out %v", tc.name, network, in, out)
		}
		if math.Abs(ratio-network/capacity) > 1e-12 {
			t.Errorf("%s: utilization %v, want network / capacity = %v", tc.name, ratio, network/capacity)
		}
		// The moving average lies between the bytes spread over the
		// meter's whole life (from the topic's creation to the scrape)
		// and over the produce loop alone, give or take the average's
		// weighting of a few seconds against its 20 s time constant.
		low := 0.7 * tc.times * produced / scraped.Sub(created).Seconds()
		high := 1.3 * tc.times * produced / last.Sub(first).Seconds()
		if network < low || network > high {
			t.Errorf("%s: network %.0f B/s, want %.0f to %.0f: %v times the produced bytes a second", tc.name, network, low, high, tc.times)
		}
		if ratio <= 0 {
			t.Errorf("%s: utilization %v, want above 0", tc.name, ratio)
		}
	}

	unset := start(t, testConfig(t.TempDir()), nil)
	m := scrapeMetrics(t, unset)
	if _, ok := m.Series("strata_agent_network_bytes_per_second"); !ok {
		t.Error("without --network-capacity: no strata_agent_network_bytes_per_second")
	}
	if v, ok := m.Series("strata_agent_utilization_ratio"); ok {
		t.Errorf("without --network-capacity: strata_agent_utilization_ratio %v; want it absent", v)
	}
}
