package loadgen

// Object-store cost: how many PUTs a Strata target made during a run,
// read from the agents' own counters (strata_store_requests_total with
// op="put", every outcome) on their HTTP /metrics, before the produce
// phase and after it. Uploads of sealed segments trail the produce, so a
// run with Config.UploadSettle waits until the count has not moved for
// that long before the second reading.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// storeMetered is a target whose agents expose store request counters.
type storeMetered interface {
	metricsAddrs() []string
}

func (s *Strata) metricsAddrs() []string { return []string{s.addrs.http} }

func (c *StrataCluster) metricsAddrs() []string {
	var addrs []string
	for _, a := range c.agents {
		addrs = append(addrs, a.addrs.http)
	}
	return addrs
}

// storePutsMetric is the counter summed over its op="put" series.
const storePutsMetric = "strata_store_requests_total{"

// storePuts sums the PUT counters of every agent.
func storePuts(ctx context.Context, addrs []string) (int64, error) {
	var total float64
	for _, addr := range addrs {
		n, err := agentPuts(ctx, addr)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return int64(total), nil
}

func agentPuts(ctx context.Context, addr string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("store metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("store metrics: GET /metrics on %s: %s", addr, resp.Status)
	}
	var total float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, storePutsMetric) || !strings.Contains(line, `op="put"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("store metrics: %q: %w", line, err)
		}
		total += v
	}
	return total, sc.Err()
}

// settlePuts polls the PUT count every half second until it has not moved
// for settle, or until timeout, and returns the last count.
func settlePuts(ctx context.Context, addrs []string, settle, timeout time.Duration) (int64, error) {
	last, err := storePuts(ctx, addrs)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(timeout)
	since := time.Now()
	for time.Since(since) < settle && time.Now().Before(deadline) {
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return last, err
		}
		n, err := storePuts(ctx, addrs)
		if err != nil {
			return last, err
		}
		if n != last {
			last, since = n, time.Now()
		}
	}
	return last, nil
}
