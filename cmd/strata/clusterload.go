package main

// The load columns of `strata cluster status --http ADDR,...`: each
// agent's moving averages of bytes in and out per second and its local
// log bytes, the numbers the balancer evens out with --rebalance-by load,
// read from the agents' /metrics (strata_agent_in_bytes_per_second,
// strata_agent_out_bytes_per_second, strata_agent_local_log_bytes, and
// strata_agent_info for the id). Metadata does not carry the agents' HTTP
// addresses, so the caller names them.

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/secretfile"
)

// maxMetricsBytes bounds one agent's /metrics answer (its per-partition
// series grow with its replicas).
const maxMetricsBytes = 64 << 20

// agentLoad is one agent's load as its metrics say.
type agentLoad struct {
	in, out, local float64 // bytes per second, bytes
}

// loadFlags are cluster status's --http, --http-tls and
// --http-token-file; the TLS files are the Kafka client's.
type loadFlags struct {
	addrs     string
	tls       bool
	tokenFile string
}

// open is how to call the agents' HTTP ports: HTTPS with cf's TLS files
// under --http-tls, and the token of --http-token-file.
func (f loadFlags) open(cf *clientFlags) (agentHTTP, error) {
	h := agentHTTP{client: http.DefaultClient, scheme: "http"}
	if f.tls {
		tc, err := cf.tlsConfig()
		if err != nil {
			return h, err
		}
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		h.client, h.scheme = &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}, "https"
	}
	if f.tokenFile != "" {
		lines, err := secretfile.Read(f.tokenFile)
		if err != nil {
			return h, fmt.Errorf("--http-token-file %s: %w", f.tokenFile, err)
		}
		h.token = lines[0].Text
	}
	return h, nil
}

// fetchAgentLoads reads the load of the agent at each of the
// comma-separated HTTP addresses, by agent id.
func fetchAgentLoads(ctx context.Context, h agentHTTP, addrs string, timeout time.Duration) (map[int32]agentLoad, error) {
	out := map[int32]agentLoad{}
	for _, addr := range strings.Split(addrs, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		id, l, err := fetchAgentLoad(ctx, h, addr)
		cancel()
		if err != nil {
			return nil, err
		}
		out[id] = l
	}
	return out, nil
}

func fetchAgentLoad(ctx context.Context, h agentHTTP, addr string) (int32, agentLoad, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url(addr, "/metrics"), nil)
	if err != nil {
		return 0, agentLoad{}, fmt.Errorf("cluster status: --http %q: %w", addr, err)
	}
	// The agent may restrict its pages (--http-require-auth-for pages).
	h.authorize(req)
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, agentLoad{}, fmt.Errorf("cluster status: agent at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, agentLoad{}, fmt.Errorf("cluster status: agent at %s answered %s", addr, resp.Status)
	}
	fams, err := metricstext.Parse(io.LimitReader(resp.Body, maxMetricsBytes))
	if err != nil {
		return 0, agentLoad{}, fmt.Errorf("cluster status: metrics of the agent at %s: %w", addr, err)
	}
	return agentLoadOf(addr, fams)
}

// agentLoadOf picks an agent's id and load out of its metrics.
func agentLoadOf(addr string, fams metricstext.Families) (int32, agentLoad, error) {
	info := fams.Samples("strata_agent_info")
	if len(info) != 1 {
		return 0, agentLoad{}, fmt.Errorf("cluster status: the agent at %s does not report strata_agent_info (an agent older than load reporting?)", addr)
	}
	id, err := strconv.ParseInt(info[0].Labels["agent_id"], 10, 32)
	if err != nil {
		return 0, agentLoad{}, fmt.Errorf("cluster status: the agent at %s reports agent id %q", addr, info[0].Labels["agent_id"])
	}
	var l agentLoad
	l.in, _ = fams.Value("strata_agent_in_bytes_per_second")
	l.out, _ = fams.Value("strata_agent_out_bytes_per_second")
	l.local, _ = fams.Value("strata_agent_local_log_bytes")
	return int32(id), l, nil
}

// formatBytes writes n bytes with a binary unit: 512 B, 1.5 KiB, 3.0 GiB.
func formatBytes(n float64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatFloat(n, 'f', 0, 64) + " B"
	}
	i := -1
	for n >= 1024 && i < len(units)-1 {
		n /= 1024
		i++
	}
	return strconv.FormatFloat(n, 'f', 1, 64) + " " + units[i:i+1] + "iB"
}
