package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/agent/console/history"
	"github.com/strata-streaming/strata/internal/testwait"
)

// agentCounters are the metrics the history samples, under their names.
type agentCounters struct {
	bytesIn, recordsIn, storeRequests, storeBytes, isr *prometheus.CounterVec
	latency                                            *prometheus.HistogramVec
	committed                                          *prometheus.GaugeVec
}

func newAgentCounters(reg *prometheus.Registry) *agentCounters {
	c := &agentCounters{
		bytesIn:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_topic_bytes_in_total"}, []string{"topic"}),
		recordsIn:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_topic_records_in_total"}, []string{"topic"}),
		storeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_store_requests_total"}, []string{"op", "outcome"}),
		storeBytes:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_store_bytes_total"}, []string{"op"}),
		isr:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_isr_changes_total"}, []string{"op"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strata_kafka_request_duration_seconds",
			Buckets: []float64{0.001, 0.01, 0.1}}, []string{"api"}),
		committed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "strata_group_committed_offset"}, []string{"group", "topic", "partition"}),
	}
	reg.MustRegister(c.bytesIn, c.recordsIn, c.storeRequests, c.storeBytes, c.isr, c.latency, c.committed)
	return c
}

// TestHistorySample: the sample reads each counter the charts need from
// the registry, by its labels, and leaves out what they do not.
func TestHistorySample(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newAgentCounters(reg)
	s := newTestServer(t, Config{}, reg)
	c.bytesIn.WithLabelValues("t").Add(100)
	c.recordsIn.WithLabelValues("t").Add(4)
	c.storeRequests.WithLabelValues("put", "ok").Add(3)
	c.storeRequests.WithLabelValues("put", "error").Add(1)
	c.storeBytes.WithLabelValues("put").Add(1000)
	c.storeBytes.WithLabelValues("get_range").Add(30)
	c.storeBytes.WithLabelValues("get").Add(20)
	c.isr.WithLabelValues("shrink").Add(2)
	c.isr.WithLabelValues("expand").Add(5)
	c.latency.WithLabelValues("0").Observe(0.005)
	c.latency.WithLabelValues("1").Observe(0.5) // a Fetch
	c.committed.WithLabelValues("g", "t", "1").Set(42)

	sm := s.sampleHistory(time.Unix(100, 0))
	want := history.Sample{
		Topics:        map[string]history.TopicCounters{"t": {BytesIn: 100, RecordsIn: 4}},
		StoreRequests: map[string]float64{"put": 4}, StoreBytes: map[string]float64{"write": 1000, "read": 50},
		ISRShrinks: 2,
	}
	switch {
	case sm.Topics["t"] != want.Topics["t"] || len(sm.Topics) != 1:
		t.Errorf("topics %+v", sm.Topics)
	case sm.StoreRequests["put"] != 4 || sm.StoreBytes["write"] != 1000 || sm.StoreBytes["read"] != 50:
		t.Errorf("store %+v %+v", sm.StoreRequests, sm.StoreBytes)
	case sm.ISRShrinks != 2:
		t.Errorf("ISR shrinks %v", sm.ISRShrinks)
	case sm.ProduceLatency.Count != 1 || len(sm.ProduceLatency.Bounds) != 3 || sm.ProduceLatency.Cumulative[0] != 0 || sm.ProduceLatency.Cumulative[1] != 1:
		t.Errorf("produce latency %+v", sm.ProduceLatency)
	case sm.Committed[history.GroupPartition{Group: "g", Partition: history.Partition{Topic: "t", Index: 1}}] != 42:
		t.Errorf("committed %+v", sm.Committed)
	}
}

// TestHistoryEndpoints: the agent's ring and the merged view, as JSON,
// with rates from the change between two samples; since leaves out the
// older points, and a since that is not a number is refused.
func TestHistoryEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newAgentCounters(reg)
	s := newTestServer(t, Config{}, reg)
	ring := history.NewRing(history.DefaultConfig())
	t0 := time.Unix(1_700_000_000, 0)
	ring.Add(s.sampleHistory(t0))
	c.bytesIn.WithLabelValues("t").Add(5000)
	c.recordsIn.WithLabelValues("t").Add(50)
	ring.Add(s.sampleHistory(t0.Add(5 * time.Second)))
	s.history.ring = ring
	srv := httptest.NewServer(s.routes())
	defer srv.Close()

	get := func(path string, v any) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("%s: %s: %v", path, b, err)
			}
		}
		return resp.StatusCode
	}
	var v history.View
	if code := get("/v1/console/history", &v); code != http.StatusOK {
		t.Fatalf("GET /v1/console/history: %d", code)
	}
	if len(v.Times) != 2 || len(v.Topics) != 1 || v.Topics[0].Name != "t" || v.ServedBy != 3 || len(v.Agents) != 1 || v.Agents[0].RingBytes == 0 {
		t.Fatalf("view %+v", v)
	}
	if in := v.Topics[0].BytesIn; !math.IsNaN(in[0]) || in[1] != 1000 || v.Topics[0].RecordsIn[1] != 10 {
		t.Errorf("bytes in %v, records in %v: want [null 1000] and [null 10]", in, v.Topics[0].RecordsIn)
	}
	var a history.Agent
	if code := get("/v1/console/history/agent?since="+itoa(t0.UnixMilli()), &a); code != http.StatusOK || a.AgentID != 3 || len(a.Times) != 1 {
		t.Errorf("the agent's ring since the first point: %d %+v", code, a)
	}
	for _, path := range []string{"/v1/console/history?since=yesterday", "/v1/console/history/agent?since=-1"} {
		if code := get(path, nil); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", path, code)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestServeSamplesHistory: Serve starts the sampler, which adds a point
// at once, and stops it before it returns.
func TestServeSamplesHistory(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := newTestServer(t, Config{Addr: "127.0.0.1:0", MaxConnections: 8, Console: console.DefaultPrices(),
		History: history.Config{Resolution: 20 * time.Millisecond, Points: 5}}, reg)
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	testwait.Until(t, 10*time.Second, func() bool { return len(s.localHistory(0).Times) >= 3 }, "three points in the ring")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	// The sampler has stopped: nothing is added any more.
	n := s.localHistory(0).Times
	time.Sleep(100 * time.Millisecond) // five slots: a running sampler would add points
	if m := s.localHistory(0).Times; len(m) != len(n) || m[len(m)-1] != n[len(n)-1] {
		t.Errorf("the ring changed after Serve returned: %v, then %v", n, m)
	}
}
