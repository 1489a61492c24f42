package httpapi

// The web console (issue 9): this file gathers what the page shows.
//
//	GET /console/          the page (agent/console/assets, embedded)
//	GET /v1/console        the cluster-wide view the page polls, as JSON: a
//	                       window of its topics and groups (?q=, ?topics_limit= ...;
//	                       console.ParseSelection)
//	GET /v1/console/agent  this agent's own report, which the others fetch
//
// The pages and JSON of one topic, group or agent are consolepages.go's;
// they read the same gathering.
//
// Why the serving agent gathers over HTTP: an agent holds the offsets,
// local bytes, tiering state and counters of its own replicas only, and
// gossip carries each agent's HTTP address. It is fetched only when the
// store's registration of the agent vouches for it (peer.go), one GET
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
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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
// result for consoleViewReuse; every request of the console's JSON (the
// paged view, a topic's, a group's, an agent's) reads the same gathering.
// The zero value is ready to use.
type consoleGate struct {
	once  sync.Once
	slot  chan struct{}     // holds a token while a gathering runs
	last  *consoleGathering // guarded by holding the slot; read-only once made
	at    time.Time
	reuse time.Duration // 0: consoleViewReuse; tests keep a view longer
}

// consoleGathering is one gathering's result: the whole cluster's view,
// and why the consumer groups are missing from it, if they are.
type consoleGathering struct {
	view      console.View
	groupsErr error
}

// get returns the last gathering if it is fresh, else waits for the slot
// (or ctx) and makes a new one with gather. The result is shared: the
// caller must not change it.
func (g *consoleGate) get(ctx context.Context, gather func(context.Context) *consoleGathering) (*consoleGathering, error) {
	g.once.Do(func() { g.slot = make(chan struct{}, 1) })
	select {
	case g.slot <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-g.slot }()
	reuse := g.reuse
	if reuse == 0 {
		reuse = consoleViewReuse
	}
	if g.last == nil || time.Since(g.at) >= reuse {
		g.last, g.at = gather(ctx), time.Now()
	}
	return g.last, nil
}

func (s *Server) registerConsole(mux *http.ServeMux) {
	mux.Handle("GET /console/", http.StripPrefix("/console/", console.Assets()))
	mux.HandleFunc("GET /v1/console", s.consoleView)
	s.registerConsolePages(mux)
	mux.HandleFunc("GET /v1/console/records", s.consoleRecords)
	s.registerConsoleAdmin(mux)
	mux.HandleFunc("GET /v1/console/agent", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, s.consoleReport())
	})
	s.registerHistory(mux)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// consoleReport is this agent's part of the view: the partitions it leads
// and its counters.
func (s *Server) consoleReport() *console.Local {
	l := &console.Local{AgentID: s.deps.ID, UptimeSeconds: time.Since(s.deps.StartedAt).Seconds(), Partitions: []console.LocalPartition{},
		BytesIn: map[string]float64{}, BytesOut: map[string]float64{}, StoreRequests: map[string]map[string]float64{},
		DisklessCommit: s.cfg.DisklessCommit}
	type key struct {
		topic string
		index int32
	}
	tiered := map[key]tiering.Status{}
	if s.deps.Tiering != nil {
		for _, st := range s.deps.Tiering.Statuses() {
			tiered[key{st.Topic, st.Partition}] = st
		}
		l.StoreUsage = s.deps.Tiering.StoreUsage()
	}
	for _, p := range s.host.Partitions() {
		if p.Leader() != s.deps.ID {
			continue
		}
		lp := console.LocalPartition{Topic: p.Topic(), Partition: p.Index(), LogStart: p.LogStartOffset(),
			HighWatermark: p.HighWatermark(), LocalBytes: p.Size()}
		if st, ok := tiered[key{p.Topic(), p.Index()}]; ok {
			lp.Tiering = &st
		}
		l.Partitions = append(l.Partitions, lp)
	}
	visitGauges(s.registry, func(name string, v float64) {
		switch name {
		case "strata_agent_in_bytes_per_second":
			l.Load.InBytesPerSecond = v
		case "strata_agent_out_bytes_per_second":
			l.Load.OutBytesPerSecond = v
		case "strata_agent_utilization_ratio":
			l.Load.Utilization = &v
		}
	})
	visitCounters(s.registry, func(name string, labels map[string]string, v float64) {
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
	l.Cost = s.costCounters()
	l.RecentCost = s.costs.recent(s.cfg.DisklessCommit, console.CostSnapshot{At: time.Now(), CostCounters: l.Cost})
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

// visitGauges calls fn with every unlabelled gauge of reg: the agent-wide
// ones.
func visitGauges(reg prometheus.Gatherer, fn func(name string, v float64)) {
	families, _ := reg.Gather()
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetGauge() != nil && len(m.GetLabel()) == 0 {
				fn(f.GetName(), m.GetGauge().GetValue())
			}
		}
	}
}

// consoleView serves GET /v1/console: a window of the gathered view's
// topics and groups (console.ParseSelection reads the parameters).
func (s *Server) consoleView(w http.ResponseWriter, r *http.Request) {
	sel, err := console.ParseSelection(r.URL.Query())
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	g, ok := s.gathered(w, r)
	if !ok {
		return
	}
	sel.MayDescribe = s.describer(r)
	writeConsoleJSON(w, g.view.Select(sel))
}

// describer is what r's caller may describe, when that is less than
// everything: a Kafka user signed in to the console (consoleadmin.go) on
// an agent with an authorizer sees the topics and groups its ACLs let it
// describe, as Kafka's Metadata and ListGroups would show it. An
// operator's token or certificate, and a port without credentials, see
// everything (nil), as the rest of the HTTP API does.
func (s *Server) describer(r *http.Request) *console.Describer {
	if !s.cfg.ACLs || s.tokens != nil && s.tokens.valid(r) {
		return nil
	}
	sess := s.sessions.get(sessionCookie(r))
	if sess == nil {
		return nil
	}
	host := s.kafkaSideHost()
	return &console.Describer{
		Topic: func(name string) bool {
			return s.host.Authorize(sess.principal, host, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, name)
		},
		Group: func(id string) bool {
			return s.host.Authorize(sess.principal, host, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, id)
		},
	}
}

// gathered is the cluster's view, gathered anew or reused (consoleGate);
// when there is none in time it answers r itself and returns false.
func (s *Server) gathered(w http.ResponseWriter, r *http.Request) (*consoleGathering, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), consoleGatherTimeout)
	defer cancel()
	g, err := s.console.get(ctx, s.gatherConsoleView)
	if err != nil {
		writeJSONError(w, http.StatusServiceUnavailable, "console: "+err.Error())
		return nil, false
	}
	return g, true
}

// writeConsoleJSON answers v, or a 500 naming the number JSON cannot
// carry (an overflow to infinity) rather than half a document.
func writeConsoleJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "console: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// gatherConsoleView builds the cluster-wide view.
func (s *Server) gatherConsoleView(ctx context.Context) *consoleGathering {
	agents := s.consoleAgents()
	var members []membership.Member
	if s.deps.Members != nil {
		members = s.deps.Members.Members()
	}
	locals := map[int32]*console.Local{s.deps.ID: s.consoleReport()}
	var errs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ag := range agents {
		if ag.ID == s.deps.ID {
			continue
		}
		wg.Go(func() {
			// Only at the address the store registered: gossip may be
			// unauthenticated (peerHTTPAddr).
			addr, _, err := s.peerHTTP(ctx, ag.ID, members)
			var l *console.Local
			if err == nil {
				l, err = s.FetchConsoleReport(ctx, addr)
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
	groups, groupsErr := s.consoleGroups(ctx)
	wg.Wait() // errs is the fetches' until they are done
	if groupsErr != nil {
		errs = append(errs, "consumer groups: "+groupsErr.Error())
	}
	var topics []console.TopicState
	for _, t := range s.host.Topics() {
		ts := console.TopicState{Name: t.Name, Internal: t.Internal, Diskless: t.Resolved.Diskless}
		for _, p := range t.Partitions {
			st := partition.StateOf(p)
			ts.Partitions = append(ts.Partitions, console.PartitionState{Index: p.Index(), Leader: st.Leader,
				Replicas: st.Replicas, ISR: st.ISR, Target: st.Target})
		}
		topics = append(topics, ts)
	}
	return &consoleGathering{view: console.Build(s.deps.ID, agents, topics, locals, groups, s.cfg.Console, errs), groupsErr: groupsErr}
}

// consoleAgents are this agent and the live agents gossip lists, each
// with an HTTP address another agent can dial.
func (s *Server) consoleAgents() []console.AgentInfo {
	if s.deps.Members == nil {
		return []console.AgentInfo{{ID: s.deps.ID, KafkaAddr: s.deps.KafkaAddr, HTTPAddr: s.Addr().String(), Rack: s.cfg.Rack, State: "-"}}
	}
	self := s.deps.Members.Self()
	out := []console.AgentInfo{{ID: s.deps.ID, KafkaAddr: self.KafkaAddr, HTTPAddr: dialableHTTP(self.HTTPAddr, self.KafkaAddr), Rack: self.Rack, State: self.State.String()}}
	for _, m := range s.deps.Members.Members() {
		if m.ID == s.deps.ID {
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

// FetchConsoleReport gets the report of the agent at addr
// (GET /v1/console/agent) as the console's gathering does: in this
// agent's scheme, with its client and credentials. Checking addr against
// the store's registration (peerHTTP) is the caller's part.
func (s *Server) FetchConsoleReport(ctx context.Context, addr string) (*console.Local, error) {
	var l console.Local
	if err := s.peerGetJSON(ctx, addr, "/v1/console/agent", consoleReportMaxBytes, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// consoleGroups describes every consumer group with its lag, through a
// Kafka client of this agent that lives for one answer.
func (s *Server) consoleGroups(ctx context.Context) ([]console.Group, error) {
	cl, err := s.kafkaClient()
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

// kafkaClient is a Kafka client of this agent for one answer of the
// console (the caller closes it), with opts added: it connects to the
// agent's own listener with the inter-agent TLS and SASL, as the agent's
// followers do, so it may read what any client may.
func (s *Server) kafkaClient(opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{kgo.SeedBrokers(s.deps.KafkaAddr)}
	if s.deps.InterAgent.TLS != nil {
		base = append(base, kgo.DialTLSConfig(s.deps.InterAgent.TLS))
	}
	if s.deps.InterAgent.SASL != nil {
		base = append(base, kgo.SASL(s.deps.InterAgent.SASL))
	}
	return kgo.NewClient(append(base, opts...)...)
}
