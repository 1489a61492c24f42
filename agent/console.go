package agent

// The web console (issue 9): this file gathers what the page shows.
//
//	GET /console/          the page (agent/console/assets, embedded)
//	GET /v1/console        the cluster-wide view the page polls, as JSON
//	GET /v1/console/agent  this agent's own report, which the others fetch
//
// Why the serving agent gathers over HTTP: an agent holds the offsets,
// local bytes, tiering state and counters of its own replicas only, and
// gossip carries each agent's HTTP address. It is fetched only when the
// store's registration of the agent vouches for it (peer_http.go), one GET
// of agents/<id>.json per agent and gathering. Merging on the server keeps the
// page on one origin (no cross-origin requests, nothing to configure) and
// lets one curl show the whole cluster. Consumer groups come through the
// Kafka API from a client of this agent (kadm's Lag, which is what
// `strata group describe` prints), so the coordinator of each group is
// asked wherever it runs.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/membership"
	"github.com/strata-streaming/strata/tiering"

	"github.com/strata-streaming/strata/agent/partition"
)

const (
	// consoleGatherTimeout bounds the whole of one /v1/console answer:
	// the other agents' reports and the group lag.
	consoleGatherTimeout = 4 * time.Second
	// consoleReportMaxBytes bounds one agent's report read by another.
	consoleReportMaxBytes = 16 << 20
	// consoleViewReuse: a view younger than this is served again rather
	// than gathered anew, so that many open pages cost one gathering.
	consoleViewReuse = time.Second
)

// consoleGate lets one /v1/console gathering run at a time and keeps its
// answer for consoleViewReuse. The zero value is ready to use.
type consoleGate struct {
	once sync.Once
	slot chan struct{} // holds a token while a gathering runs
	view []byte        // the last answer, guarded by holding the slot
	at   time.Time
}

// get returns the last answer if it is fresh, else waits for the slot (or
// ctx) and gathers a new one with gather.
func (g *consoleGate) get(ctx context.Context, gather func(context.Context) []byte) ([]byte, error) {
	g.once.Do(func() { g.slot = make(chan struct{}, 1) })
	select {
	case g.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-g.slot }()
	if g.view == nil || time.Since(g.at) >= consoleViewReuse {
		g.view, g.at = gather(ctx), time.Now()
	}
	return g.view, nil
}

func (a *Agent) registerConsole(mux *http.ServeMux) {
	mux.Handle("GET /console/", http.StripPrefix("/console/", console.Assets()))
	mux.HandleFunc("GET /v1/console", a.consoleView)
	mux.HandleFunc("GET /v1/console/agent", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, a.consoleReport())
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// consoleReport is this agent's part of the view: the partitions it leads
// and its counters.
func (a *Agent) consoleReport() *console.Local {
	l := &console.Local{AgentID: a.id, UptimeSeconds: time.Since(a.startedAt).Seconds(), Partitions: []console.LocalPartition{},
		BytesIn: map[string]float64{}, BytesOut: map[string]float64{}, StoreRequests: map[string]map[string]float64{}}
	type key struct {
		topic string
		index int32
	}
	tiered := map[key]tiering.Status{}
	if a.tier != nil {
		for _, s := range a.tier.Statuses() {
			tiered[key{s.Topic, s.Partition}] = s
		}
		l.StoreUsage = a.tier.StoreUsage()
	}
	for _, p := range a.localPartitions() {
		if p.Leader() != a.id {
			continue
		}
		lp := console.LocalPartition{Topic: p.Topic(), Partition: p.Index(), LogStart: p.LogStartOffset(),
			HighWatermark: p.HighWatermark(), LocalBytes: p.Size()}
		if s, ok := tiered[key{p.Topic(), p.Index()}]; ok {
			lp.Tiering = &s
		}
		l.Partitions = append(l.Partitions, lp)
	}
	visitCounters(a.registry, func(name string, labels map[string]string, v float64) {
		switch name {
		case "strata_topic_bytes_in_total":
			l.BytesIn[labels["topic"]] += v
		case "strata_topic_bytes_out_total":
			l.BytesOut[labels["topic"]] += v
		case "strata_store_requests_total":
			op := labels["op"]
			if l.StoreRequests[op] == nil {
				l.StoreRequests[op] = map[string]float64{}
			}
			l.StoreRequests[op][labels["outcome"]] += v
		}
	})
	return l
}

// visitCounters calls fn with every counter of reg, as /metrics shows it.
func visitCounters(reg prometheus.Gatherer, fn func(name string, labels map[string]string, v float64)) {
	families, _ := reg.Gather() // a partial gather still has what it could collect
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetCounter() == nil {
				continue
			}
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			fn(f.GetName(), labels, m.GetCounter().GetValue())
		}
	}
}

// consoleView serves GET /v1/console.
func (a *Agent) consoleView(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), consoleGatherTimeout)
	defer cancel()
	view, err := a.consoleGate.get(ctx, a.gatherConsoleView)
	if err != nil {
		http.Error(w, "console: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(view)
}

// gatherConsoleView builds the cluster-wide view as JSON.
func (a *Agent) gatherConsoleView(ctx context.Context) []byte {
	agents := a.consoleAgents()
	var members []membership.Member
	if a.members != nil {
		members = a.members.Members()
	}
	locals := map[int32]*console.Local{a.id: a.consoleReport()}
	var errs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ag := range agents {
		if ag.ID == a.id {
			continue
		}
		wg.Go(func() {
			// Only at the address the store registered: gossip may be
			// unauthenticated (peerHTTPAddr).
			addr, _, err := a.peerHTTP(ctx, ag.ID, members)
			var l *console.Local
			if err == nil {
				l, err = a.fetchConsoleReport(ctx, addr)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs = append(errs, fmt.Sprintf("agent %d: %v", ag.ID, err))
			case l.AgentID != ag.ID:
				errs = append(errs, fmt.Sprintf("agent %d: %s answers as agent %d", ag.ID, addr, l.AgentID))
			default:
				locals[ag.ID] = l
			}
		})
	}
	groups, err := a.consoleGroups(ctx)
	wg.Wait() // errs is the fetches' until they are done
	if err != nil {
		errs = append(errs, "consumer groups: "+err.Error())
	}
	var topics []console.TopicState
	for _, t := range a.Topics() {
		ts := console.TopicState{Name: t.Name, Internal: t.Internal}
		for _, p := range t.Partitions {
			st := partition.StateOf(p)
			ts.Partitions = append(ts.Partitions, console.PartitionState{Index: p.Index(), Leader: st.Leader,
				Replicas: st.Replicas, ISR: st.ISR, Target: st.Target})
		}
		topics = append(topics, ts)
	}
	b, err := json.Marshal(console.Build(a.id, agents, topics, locals, groups, a.cfg.Console, errs))
	if err != nil { // a number JSON cannot carry (an overflow to infinity)
		b, _ = json.Marshal(map[string][]string{"errors": {"console: " + err.Error()}})
	}
	return b
}

// consoleAgents are this agent and the live agents gossip lists, each
// with an HTTP address another agent can dial.
func (a *Agent) consoleAgents() []console.AgentInfo {
	if a.members == nil {
		return []console.AgentInfo{{ID: a.id, KafkaAddr: a.advertisedAddr(), HTTPAddr: a.httpLn.Addr().String(), Rack: a.cfg.Rack, State: "-"}}
	}
	self := a.members.Self()
	out := []console.AgentInfo{{ID: a.id, KafkaAddr: self.KafkaAddr, HTTPAddr: dialableHTTP(self.HTTPAddr, self.KafkaAddr), Rack: self.Rack, State: self.State.String()}}
	for _, m := range a.members.Members() {
		if m.ID == a.id {
			continue
		}
		out = append(out, console.AgentInfo{ID: m.ID, KafkaAddr: m.KafkaAddr, HTTPAddr: dialableHTTP(m.HTTPAddr, m.KafkaAddr), Rack: m.Rack, State: m.State.String()})
	}
	return out
}

// dialableHTTP replaces the wildcard host of an HTTP listener bound to all
// interfaces (":9644" gossips as "[::]:9644") with the host of the agent's
// advertised Kafka address.
func dialableHTTP(httpAddr, kafkaAddr string) string {
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return httpAddr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if kh, _, err := net.SplitHostPort(kafkaAddr); err == nil {
			return net.JoinHostPort(kh, port)
		}
	}
	return httpAddr
}

func (a *Agent) fetchConsoleReport(ctx context.Context, addr string) (*console.Local, error) {
	if addr == "" {
		return nil, fmt.Errorf("advertises no HTTP address")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.httpScheme+"://"+addr+"/v1/console/agent", nil)
	if err != nil {
		return nil, err
	}
	// The page may be restricted (--http-require-auth-for pages).
	a.httpTokens.authorize(req)
	resp, err := a.peerClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %s", addr, resp.Status)
	}
	var l console.Local
	if err := json.NewDecoder(io.LimitReader(resp.Body, consoleReportMaxBytes)).Decode(&l); err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	return &l, nil
}

// consoleGroups describes every consumer group with its lag, through a
// Kafka client of this agent that lives for one answer.
func (a *Agent) consoleGroups(ctx context.Context) ([]console.Group, error) {
	// Through the inter-agent listener, as the agent's followers connect.
	opts := []kgo.Opt{kgo.SeedBrokers(a.advertisedAddr())}
	if a.peer.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(a.peer.TLS))
	}
	if a.peer.SASL != nil {
		opts = append(opts, kgo.SASL(a.peer.SASL))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	groups := []console.Group{}
	if len(listed) == 0 {
		return groups, nil
	}
	lags, err := adm.Lag(ctx, listed.Groups()...)
	if err != nil {
		return nil, err
	}
	for _, l := range lags.Sorted() {
		groups = append(groups, console.GroupFromLag(l))
	}
	return groups, nil
}
