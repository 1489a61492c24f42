package loadgen

// Object-store cost: how many PUTs a Strata target made during a run,
// read from the agents' own counters (strata_store_requests_total with
// op="put", every outcome) on their HTTP /metrics, before the produce
// phase and after it. Uploads of sealed segments trail the produce, so a
// run with Config.UploadSettle waits until the count has not moved for
// that long before the second reading. A catchup-store run reads, the same
// way, what its timed read took from the store (StoreRead).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/strata-streaming/strata/internal/metricstext"
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

// storePuts sums the PUT counters (strata_store_requests_total,
// op="put", every outcome) of every agent.
func storePuts(ctx context.Context, addrs []string) (int64, error) {
	m, err := scrape(ctx, addrs)
	if err != nil {
		return 0, err
	}
	return int64(m.sum("strata_store_requests_total", "op", "put")), nil
}

// storeReads reads, summed over the agents, the counters a remote read of
// topic moves: the topic's GET-class requests and bytes read, and the
// chunk cache's hits and misses.
func storeReads(ctx context.Context, addrs []string, topic string) (StoreRead, error) {
	m, err := scrape(ctx, addrs)
	if err != nil {
		return StoreRead{}, err
	}
	var r StoreRead
	for _, c := range []struct {
		into   *int64
		name   string
		labels []string
	}{
		{&r.Gets, "strata_store_topic_requests_total", []string{"topic", topic, "op", "GET"}},
		{&r.Bytes, "strata_store_topic_bytes_total", []string{"topic", topic, "direction", "read"}},
		{&r.CacheHits, "strata_tiering_cache_requests_total", []string{"result", "hit"}},
		{&r.CacheMisses, "strata_tiering_cache_requests_total", []string{"result", "miss"}},
	} {
		*c.into = int64(m.sum(c.name, c.labels...))
	}
	return r, nil
}

// since is what the counters moved from before to r.
func (r StoreRead) since(before StoreRead) StoreRead {
	return StoreRead{Gets: r.Gets - before.Gets, Bytes: r.Bytes - before.Bytes,
		CacheHits: r.CacheHits - before.CacheHits, CacheMisses: r.CacheMisses - before.CacheMisses}
}

// agentMetrics are the scrapes of one or more agents' /metrics.
type agentMetrics []metricstext.Families

// scrape reads GET /metrics of every agent at addrs.
func scrape(ctx context.Context, addrs []string) (agentMetrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var m agentMetrics
	for _, addr := range addrs {
		fams, err := metricstext.Scrape(ctx, "http://"+addr+"/metrics")
		if err != nil {
			return nil, fmt.Errorf("agent metrics: %w", err)
		}
		m = append(m, fams)
	}
	return m, nil
}

// sum adds, over the agents, the values of the samples of the named
// metric whose labels include every pair in labels (key, value, ...); 0
// if there are none, as for a counter not yet touched.
func (m agentMetrics) sum(name string, labels ...string) float64 {
	var total float64
	for _, fams := range m {
		v, _ := fams.Value(name, labels...)
		total += v
	}
	return total
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

// storeSegmentBytes is the segment size of a catchup-store topic: small,
// so that most of the data is in sealed segments, uploaded and then
// removed from the agent's disk.
const storeSegmentBytes = 4 << 20

// storeTopicConfigs are a catchup-store topic's configs: small segments,
// nothing kept locally once uploaded, nothing expired.
func storeTopicConfigs() map[string]*string {
	v := func(s string) *string { return &s }
	return map[string]*string{
		"segment.bytes":         v(fmt.Sprint(storeSegmentBytes)),
		"local.retention.bytes": v("0"),
		"retention.ms":          v("-1"),
	}
}

// tierStatus is one partition's entry in an agent's GET /v1/tiering.
type tierStatus struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	LocalBytes  int64  `json:"local_bytes"`
	RemoteBytes int64  `json:"remote_bytes"`
	LagSegments int    `json:"upload_lag_segments"`
}

// awaitTiered waits up to timeout until every partition of topic has
// uploaded every sealed segment and keeps at most its active segment
// locally, as the agents report on GET /v1/tiering.
func awaitTiered(ctx context.Context, addrs []string, topic string, partitions int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last []tierStatus
	for {
		done := map[int32]bool{}
		last = last[:0]
		for _, addr := range addrs {
			st, err := tieringStatus(ctx, addr)
			if err != nil {
				return err
			}
			for _, s := range st {
				if s.Topic != topic {
					continue
				}
				last = append(last, s)
				if s.LagSegments == 0 && s.RemoteBytes > 0 && s.LocalBytes <= storeSegmentBytes {
					done[s.Partition] = true
				}
			}
		}
		if len(done) >= partitions {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s not in the store within %v: %+v", topic, timeout, last)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

func tieringStatus(ctx context.Context, addr string) ([]tierStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/tiering", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tiering status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tiering status: GET /v1/tiering on %s: %s", addr, resp.Status)
	}
	var body struct {
		Partitions []tierStatus `json:"partitions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("tiering status: %w", err)
	}
	return body.Partitions, nil
}
