package httpapi

// The console's charts (issue 32, item 1): this agent's history ring and
// the cluster-wide view of the rings.
//
//	GET /v1/console/history?since=MS        every agent's history merged (history.Merge)
//	GET /v1/console/history/agent?since=MS  this agent's ring (history.Ring.Since)
//
// since is unix milliseconds: the answer holds the points after it (0 or
// none: the whole ring, an hour). The ring is sampled by a goroutine that
// Serve starts and stops (runHistory), every history.Config.Resolution,
// at wall-clock multiples of it so that the agents' points line up. The
// merged view is gathered as /v1/console is (console.go): from the
// agents gossip lists, each at the HTTP address the store vouches for.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/agent/console/history"
	"github.com/strata-streaming/strata/membership"
)

// historyReportMaxBytes bounds one agent's history read by another: a
// full ring at its caps writes about 15 MB of JSON.
const historyReportMaxBytes = 64 << 20

// historyRing is the ring and the lock its owner holds around it; the
// gate lets one merged gathering run at a time.
type historyRing struct {
	mu   sync.Mutex
	ring *history.Ring // nil until Serve
	gate chan struct{}
}

// historyConfig is the ring's bounds: Config.History, else the defaults.
func (s *Server) historyConfig() history.Config {
	if s.cfg.History != (history.Config{}) {
		return s.cfg.History
	}
	return history.DefaultConfig()
}

// runHistory samples this agent into the ring at every slot boundary
// (plus a tenth of a slot, so that a late timer still lands in its slot)
// until stop is closed.
func (s *Server) runHistory(stop <-chan struct{}) {
	cfg := s.historyConfig()
	s.history.mu.Lock()
	s.history.ring = history.NewRing(cfg)
	s.history.mu.Unlock()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		}
		sample := s.sampleHistory(time.Now())
		s.history.mu.Lock()
		s.history.ring.Add(sample)
		s.history.mu.Unlock()
		s.costs.add(console.CostSnapshot{At: sample.At, CostCounters: s.costCounters()})
		now := time.Now()
		next := time.UnixMilli(cfg.Slot(now)).Add(cfg.Resolution + cfg.Resolution/10)
		timer.Reset(next.Sub(now))
	}
}

// produceAPI is the api label of Produce in strata_kafka_request_duration_seconds.
const produceAPI = "0"

// sampleHistory reads this agent's counters from its registry, the high
// watermarks of the partitions it leads, and its tiered bytes.
func (s *Server) sampleHistory(at time.Time) history.Sample {
	sm := history.Sample{At: at, Topics: map[string]history.TopicCounters{}, StoreRequests: map[string]float64{},
		StoreBytes: map[string]float64{}, HighWatermarks: map[history.Partition]int64{}, Committed: map[history.GroupPartition]int64{}}
	families, _ := s.registry.Gather() // a partial gather still has what it could collect
	for _, f := range families {
		for _, m := range f.GetMetric() {
			s.sampleMetric(&sm, f.GetName(), m)
		}
	}
	internal := map[string]bool{}
	for _, t := range s.host.Topics() {
		internal[t.Name] = t.Internal
	}
	led := map[history.Partition]bool{}
	for _, p := range s.host.Partitions() {
		if p.Leader() != s.deps.ID {
			continue
		}
		key := history.Partition{Topic: p.Topic(), Index: p.Index()}
		led[key] = true
		// Groups do not read the internal topics: their offsets would
		// take places under the cap for nothing.
		if !internal[p.Topic()] {
			sm.HighWatermarks[key] = p.HighWatermark()
		}
	}
	if s.deps.Tiering != nil {
		for _, st := range s.deps.Tiering.Statuses() {
			if led[history.Partition{Topic: st.Topic, Index: st.Partition}] {
				sm.BucketBytes += float64(st.RemoteBytes)
			}
		}
	}
	return sm
}

// sampleMetric adds one metric of the family name to sm, if the history
// keeps it.
func (s *Server) sampleMetric(sm *history.Sample, name string, m *dto.Metric) {
	counter := m.GetCounter().GetValue()
	topic := func(f func(*history.TopicCounters)) {
		t := sm.Topics[label(m, "topic")]
		f(&t)
		sm.Topics[label(m, "topic")] = t
	}
	switch name {
	case "strata_topic_bytes_in_total":
		topic(func(t *history.TopicCounters) { t.BytesIn += counter })
	case "strata_topic_bytes_out_total":
		topic(func(t *history.TopicCounters) { t.BytesOut += counter })
	case "strata_topic_records_in_total":
		topic(func(t *history.TopicCounters) { t.RecordsIn += counter })
	case "strata_topic_records_out_total":
		topic(func(t *history.TopicCounters) { t.RecordsOut += counter })
	case "strata_store_requests_total":
		sm.StoreRequests[label(m, "op")] += counter
	case "strata_store_bytes_total":
		switch label(m, "op") {
		case "put":
			sm.StoreBytes["write"] += counter
		case "get", "get_range":
			sm.StoreBytes["read"] += counter
		}
	case "strata_kafka_request_duration_seconds":
		if h := m.GetHistogram(); h != nil && label(m, "api") == produceAPI {
			for _, b := range h.GetBucket() {
				sm.ProduceLatency.Bounds = append(sm.ProduceLatency.Bounds, b.GetUpperBound())
				sm.ProduceLatency.Cumulative = append(sm.ProduceLatency.Cumulative, float64(b.GetCumulativeCount()))
			}
			sm.ProduceLatency.Count = float64(h.GetSampleCount())
		}
	case "strata_partition_fsyncs_total":
		sm.Fsyncs += counter
	case "strata_partition_fsync_seconds_total":
		sm.FsyncSeconds += counter
	case "strata_isr_changes_total":
		if label(m, "op") == "shrink" {
			sm.ISRShrinks += counter
		}
	case "strata_group_committed_offset":
		p, err := strconv.ParseInt(label(m, "partition"), 10, 32)
		if err == nil {
			gp := history.GroupPartition{Group: label(m, "group"), Partition: history.Partition{Topic: label(m, "topic"), Index: int32(p)}}
			sm.Committed[gp] = int64(m.GetGauge().GetValue())
		}
	}
}

// label is m's value of the label name, "" without it.
func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

// historySince reads ?since=, unix milliseconds; 0 without it.
func historySince(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("since")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("since=%q: want unix milliseconds", v)
	}
	return n, nil
}

// localHistory is this agent's ring after since.
func (s *Server) localHistory(since int64) history.Agent {
	s.history.mu.Lock()
	defer s.history.mu.Unlock()
	if s.history.ring == nil { // before Serve
		a := history.NewRing(s.historyConfig()).Since(since)
		a.AgentID = s.deps.ID
		return a
	}
	a := s.history.ring.Since(since)
	a.AgentID = s.deps.ID
	return a
}

func (s *Server) registerHistory(mux *http.ServeMux) {
	s.history.gate = make(chan struct{}, 1)
	mux.HandleFunc("GET /v1/console/history/agent", func(w http.ResponseWriter, r *http.Request) {
		since, err := historySince(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, s.localHistory(since))
	})
	mux.HandleFunc("GET /v1/console/history", s.historyView)
}

// historyView serves GET /v1/console/history.
func (s *Server) historyView(w http.ResponseWriter, r *http.Request) {
	since, err := historySince(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), consoleGatherTimeout)
	defer cancel()
	select {
	case s.history.gate <- struct{}{}:
	case <-ctx.Done():
		http.Error(w, "console history: "+ctx.Err().Error(), http.StatusServiceUnavailable)
		return
	}
	defer func() { <-s.history.gate }()
	writeJSON(w, s.gatherHistory(ctx, since))
}

// gatherHistory merges this agent's ring with those of the live agents
// gossip lists.
func (s *Server) gatherHistory(ctx context.Context, since int64) history.View {
	var members []membership.Member
	if s.deps.Members != nil {
		members = s.deps.Members.Members()
	}
	agents := []history.Agent{s.localHistory(since)}
	var errs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ag := range members {
		if ag.ID == s.deps.ID {
			continue
		}
		wg.Go(func() {
			// Only at the address the store registered (peerHTTPAddr).
			addr, _, err := s.peerHTTP(ctx, ag.ID, members)
			var a history.Agent
			if err == nil {
				err = s.peerGetJSON(ctx, addr, "/v1/console/history/agent?since="+strconv.FormatInt(since, 10), historyReportMaxBytes, &a)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("agent %d: %v", ag.ID, err))
			case a.AgentID != ag.ID:
				errs = append(errs, fmt.Sprintf("agent %d: %s answers as agent %d", ag.ID, addr, a.AgentID))
			default:
				agents = append(agents, a)
			}
		})
	}
	wg.Wait()
	internal := map[string]bool{}
	for _, t := range s.host.Topics() {
		internal[t.Name] = t.Internal
	}
	return history.Merge(s.deps.ID, agents, internal, s.cfg.Console, errs)
}

// peerGetJSON gets path from the agent at addr as the console's gathering
// does (in this agent's scheme, with its client and credentials) and
// decodes at most maxBytes of JSON into v. Checking addr against the
// store's registration (peerHTTP) is the caller's part.
func (s *Server) peerGetJSON(ctx context.Context, addr, path string, maxBytes int64, v any) error {
	if addr == "" {
		return fmt.Errorf("advertises no HTTP address")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.scheme+"://"+addr+path, nil)
	if err != nil {
		return err
	}
	// The pages may be restricted (--http-require-auth-for pages).
	s.tokens.authorize(req)
	resp, err := s.peerClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBytes)).Decode(v); err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	return nil
}
