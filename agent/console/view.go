// Package console is the agent's web console: the JSON model of what it
// shows, the pure function that builds it from what the agents report, and
// the static pages (HTML, CSS, JavaScript embedded in the binary; no CDN).
//
// Data flow. Each agent knows the cluster's partition states (metadata),
// the live agents (gossip), but offsets, local bytes, tiering state and
// counters only of its own replicas. So every agent serves its own Local
// report (GET /v1/console/agent), and the agent a browser asks
// (GET /v1/console) gathers the others' reports over HTTP at the addresses
// they advertise in gossip, adds the consumer groups it asks of the cluster
// through the Kafka API (as `strata group describe` does), and merges it
// all with Build. The browser talks to one origin only, and a report that
// does not arrive leaves its agent's numbers blank rather than wrong.
//
// A cluster of thousands of topics is gathered once a second at most, and
// each request keeps the part it asks for: a window of the topics and
// groups whose names match a search (Select, list.go), or one topic, group
// or agent, each with a page of its own (detail.go, detail.html).
//
// The chart page (charts.html, drawn with the vendored uPlot) shows the
// last hour instead of the present: each agent's history ring and their
// merge are package history's.
//
// The message browser (browse.html) shows a page of a topic's records,
// which the serving agent reads through its Kafka client
// (agent/httpapi/records.go); how a record is shown, what a transaction
// marker decides and how a page keeps its rows are this package's
// (records.go, page.go).
//
// Build, Select and the detail functions are pure and safe for concurrent
// use, and Select and the detail functions leave the View they read as it
// was; the types are plain data.
package console

import (
	"cmp"
	"slices"
	"strings"

	"github.com/strata-streaming/strata/tiering"
)

// Local is one agent's report about itself.
type Local struct {
	AgentID       int32   `json:"agent_id"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Partitions are the replicas this agent leads.
	Partitions []LocalPartition `json:"partitions"`
	// BytesIn and BytesOut are record bytes produced and fetched, by topic
	// (strata_topic_bytes_in_total and _out_total).
	BytesIn  map[string]float64 `json:"bytes_in"`
	BytesOut map[string]float64 `json:"bytes_out"`
	// StoreUsage is the per-topic cost counters (tiering/cost.go).
	StoreUsage map[string]tiering.TopicUsage `json:"store_usage"`
	// StoreRequests is strata_store_requests_total: op -> outcome -> count.
	StoreRequests map[string]map[string]float64 `json:"store_requests"`
	// Load is the agent's measured traffic, the moving averages the
	// balancer places by (strata_agent_in_bytes_per_second, _out_, and
	// strata_agent_utilization_ratio when --network-capacity is set).
	Load AgentLoad `json:"load"`
	// DisklessCommit is the agent's diskless commit settings, Cost its
	// cost model's counters since it started, and RecentCost what they
	// gained over its last minute, absent before its first snapshot
	// (costmodel.go).
	DisklessCommit CommitSettings `json:"diskless_commit"`
	Cost           CostCounters   `json:"cost"`
	RecentCost     *RecentCost    `json:"recent_cost,omitempty"`
}

// AgentLoad is an agent's bytes per second in and out, and its
// utilization (nil without --network-capacity).
type AgentLoad struct {
	InBytesPerSecond  float64  `json:"in_bytes_per_second"`
	OutBytesPerSecond float64  `json:"out_bytes_per_second"`
	Utilization       *float64 `json:"utilization,omitempty"`
}

// LocalPartition is a partition as its leader sees it.
type LocalPartition struct {
	Topic         string          `json:"topic"`
	Partition     int32           `json:"partition"`
	LogStart      int64           `json:"log_start_offset"`
	HighWatermark int64           `json:"high_watermark"`
	LocalBytes    int64           `json:"local_bytes"`
	Tiering       *tiering.Status `json:"tiering,omitempty"`
}

// AgentInfo is a live agent as gossip lists it.
type AgentInfo struct {
	ID        int32  `json:"id"`
	KafkaAddr string `json:"kafka_addr"`
	HTTPAddr  string `json:"http_addr"`
	Rack      string `json:"rack"`
	State     string `json:"state"`
}

// TopicState is a topic's partition states from the metadata store.
type TopicState struct {
	Name       string
	Internal   bool
	Diskless   bool // diskless.enable=true
	Partitions []PartitionState
}

// PartitionState is one partition's replica assignment.
type PartitionState struct {
	Index    int32
	Leader   int32 // -1: none
	Replicas []int32
	ISR      []int32
	Target   []int32 // non-empty while the partition moves
}

// View is everything the console shows.
type View struct {
	ServedBy int32     `json:"served_by"`
	Agents   []Agent   `json:"agents"`
	Moves    []Move    `json:"moves"`
	Topics   []Topic   `json:"topics"`
	Groups   []Group   `json:"groups"`
	Store    Store     `json:"store"`
	Prices   Prices    `json:"prices"`
	Errors   []string  `json:"errors"`
	Counts   Summaries `json:"counts"`
	// Listed says which part of the cluster's topics and groups Topics
	// and Groups hold: all of them from Build, a window from Select.
	Listed Listing `json:"listed"`
	// DisklessCommit is the serving agent's commit settings, which
	// predict its diskless PUTs (each agent predicts with its own).
	DisklessCommit CommitSettings `json:"diskless_commit"`
}

// Summaries are the cluster's headline numbers.
type Summaries struct {
	Agents          int `json:"agents"`
	Partitions      int `json:"partitions"`
	Leaderless      int `json:"leaderless"`
	UnderReplicated int `json:"under_replicated"`
	// Topics and Groups count every topic (internal ones too) and group,
	// whatever part of them a View lists.
	Topics int `json:"topics"`
	Groups int `json:"groups"`
}

// Agent is one live agent with what it holds.
type Agent struct {
	AgentInfo
	Replicas  int       `json:"replicas"`
	Leaders   int       `json:"leaders"`
	Reporting bool      `json:"reporting"` // its Local report arrived
	Load      AgentLoad `json:"load"`      // zero when it did not report
}

// Move is a partition reassignment in flight.
type Move struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Target    []int32 `json:"target"`
}

// Topic is a topic's partitions and totals.
type Topic struct {
	Name       string      `json:"name"`
	Internal   bool        `json:"internal"`
	Partitions []Partition `json:"partitions"`
	// Records is the sum over partitions of high watermark - log start;
	// the totals count only partitions whose leader reported.
	Records     int64   `json:"records"`
	LocalBytes  int64   `json:"local_bytes"`
	BucketBytes int64   `json:"bucket_bytes"`
	BytesIn     float64 `json:"bytes_in"`  // a counter: the page derives rates
	BytesOut    float64 `json:"bytes_out"` // a counter
	// Usage sums the cost counters of every agent, a diskless topic's
	// with its shares of the commit objects; PutsPerGiB is computed from
	// the sums (absent before anything was written).
	Usage       tiering.TopicUsage `json:"store_usage"`
	PutsPerGiB  *float64           `json:"puts_per_gib,omitempty"`
	MonthlyCost Cost               `json:"monthly_cost"`
	// Diskless is diskless.enable. Of the cost model's two lines
	// (costmodel.go), a diskless topic has DisklessCost, its commit
	// objects' PUTs, and a classic one Replication, its followers'
	// copies; the other is absent.
	Diskless     bool             `json:"diskless"`
	DisklessCost *DisklessCost    `json:"diskless_cost,omitempty"`
	Replication  *ReplicationCost `json:"replication,omitempty"`
}

// Partition is one partition: its assignment and, from its leader, its
// offsets and bytes.
type Partition struct {
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
	Reported  bool    `json:"reported"` // the leader's numbers below are known
	LogStart  int64   `json:"log_start_offset"`
	// HighWatermark is the end a consumer sees (END in `strata group
	// describe`); Records is HighWatermark - LogStart.
	HighWatermark int64 `json:"high_watermark"`
	Records       int64 `json:"records"`
	LocalBytes    int64 `json:"local_bytes"`
	// Tiering is the leader's tiering status (`strata tiering status`);
	// absent for a partition that is not tiered.
	Tiering *tiering.Status `json:"tiering,omitempty"`
}

// Group is a consumer group with its lag.
type Group struct {
	Name        string           `json:"name"`
	State       string           `json:"state"`
	Protocol    string           `json:"protocol"`
	Coordinator int32            `json:"coordinator"`
	Members     []Member         `json:"members"`
	Lag         []GroupPartition `json:"lag"`
	TotalLag    int64            `json:"total_lag"`
	Error       string           `json:"error,omitempty"`
}

// Member is a group member and its assignment ("topic:0,1 other:2").
type Member struct {
	ID       string `json:"id"`
	ClientID string `json:"client_id"`
	Host     string `json:"host"`
	Assigned string `json:"assigned"`
}

// GroupPartition is the lag of one partition; -1 means unknown (no commit,
// or the end offset could not be listed).
type GroupPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed"`
	End       int64  `json:"end"`
	Lag       int64  `json:"lag"`
	Member    string `json:"member"`
}

// Store is the cluster's store traffic and its estimated cost.
type Store struct {
	// Requests is op -> outcome -> count, summed over the agents that
	// reported (every store request, not only tiering's).
	Requests map[string]map[string]float64 `json:"requests"`
	// Errors counts requests whose outcome is "error" (not a miss, a lost
	// condition or a cancellation, which are part of normal work).
	Errors      float64            `json:"errors"`
	Usage       tiering.TopicUsage `json:"usage"` // sum over topics
	PutsPerGiB  *float64           `json:"puts_per_gib,omitempty"`
	BucketBytes int64              `json:"bucket_bytes"`
	MonthlyCost Cost               `json:"monthly_cost"`
	// Diskless and Replication sum the cost model's lines over every
	// topic.
	Diskless    DisklessCost    `json:"diskless"`
	Replication ReplicationCost `json:"replication"`
}

// Build merges the reports of the agents (locals; an agent missing from it
// did not report) with the cluster's state. errs are problems met while
// gathering, shown as they are.
func Build(self int32, agents []AgentInfo, topics []TopicState, locals map[int32]*Local, groups []Group, prices Prices, errs []string) View {
	v := View{ServedBy: self, Prices: prices, Errors: append([]string{}, errs...), Moves: []Move{}, Groups: groups,
		Store: Store{Requests: map[string]map[string]float64{}}}
	if v.Groups == nil {
		v.Groups = []Group{}
	}
	// A partition's numbers are taken from the report of the agent the
	// metadata names as its leader, and only if that agent leads it in its
	// own view too: a deposed leader's stale numbers are not shown.
	type ledBy struct {
		partitionKey
		agent int32
	}
	leaders := map[ledBy]LocalPartition{}
	for id, l := range locals {
		for _, p := range l.Partitions {
			leaders[ledBy{partitionKey{p.Topic, p.Partition}, id}] = p
		}
	}
	replicas, leading := map[int32]int{}, map[int32]int{}
	perMonth := map[string]tiering.TopicUsage{}
	usage := map[string]tiering.TopicUsage{}
	addUsage := func(topic string, u tiering.TopicUsage, uptime float64) {
		usage[topic] = usage[topic].Add(u)
		perMonth[topic] = perMonth[topic].Add(PerMonth(u, uptime))
	}
	for id, l := range locals {
		if id == self {
			v.DisklessCommit = l.DisklessCommit
		}
		for topic, u := range l.StoreUsage {
			addUsage(topic, u, l.UptimeSeconds)
		}
		// Tiering does not count the commit objects (the writer puts
		// them), so a diskless topic's store usage adds its shares.
		for topic, u := range l.Cost.Diskless {
			addUsage(topic, tiering.TopicUsage{Puts: u.Puts, BytesWritten: u.Bytes}, l.UptimeSeconds)
		}
		for op, outcomes := range l.StoreRequests {
			if v.Store.Requests[op] == nil {
				v.Store.Requests[op] = map[string]float64{}
			}
			for outcome, n := range outcomes {
				v.Store.Requests[op][outcome] += n
				if outcome == "error" {
					v.Store.Errors += n
				}
			}
		}
	}
	costs := newCostModel(prices, locals)
	var monthTotal tiering.TopicUsage
	for _, ts := range topics {
		t := Topic{Name: ts.Name, Internal: ts.Internal, Partitions: []Partition{}, Usage: usage[ts.Name], Diskless: ts.Diskless}
		if ts.Diskless {
			t.DisklessCost = costs.disklessCost(ts.Name)
		} else {
			t.Replication = costs.replicationCost(ts.Name)
		}
		for _, ps := range ts.Partitions {
			v.Counts.Partitions++
			if ts.Diskless {
				// Every agent serves a diskless partition: it has no
				// leader, replicas or ISR to show or count (design §7a).
				t.Partitions = append(t.Partitions, Partition{Partition: ps.Index, Leader: -1, Replicas: []int32{}, ISR: []int32{}})
				continue
			}
			for _, r := range ps.Replicas {
				replicas[r]++
			}
			if ps.Leader >= 0 {
				leading[ps.Leader]++
			} else {
				v.Counts.Leaderless++
			}
			if len(ps.ISR) < len(ps.Replicas) {
				v.Counts.UnderReplicated++
			}
			if len(ps.Target) > 0 {
				v.Moves = append(v.Moves, Move{Topic: ts.Name, Partition: ps.Index, Replicas: ps.Replicas, Target: ps.Target})
			}
			p := Partition{Partition: ps.Index, Leader: ps.Leader, Replicas: ps.Replicas, ISR: ps.ISR}
			if lp, ok := leaders[ledBy{partitionKey{ts.Name, ps.Index}, ps.Leader}]; ok {
				p.Reported = true
				p.LogStart, p.HighWatermark, p.LocalBytes, p.Tiering = lp.LogStart, lp.HighWatermark, lp.LocalBytes, lp.Tiering
				p.Records = max(lp.HighWatermark-lp.LogStart, 0)
				t.Records += p.Records
				t.LocalBytes += p.LocalBytes
				if p.Tiering != nil {
					t.BucketBytes += p.Tiering.RemoteBytes
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		slices.SortFunc(t.Partitions, func(a, b Partition) int { return cmp.Compare(a.Partition, b.Partition) })
		for _, l := range locals {
			t.BytesIn += l.BytesIn[ts.Name]
			t.BytesOut += l.BytesOut[ts.Name]
		}
		t.PutsPerGiB = ratio(t.Usage)
		t.MonthlyCost = prices.MonthlyCost(perMonth[ts.Name], t.BucketBytes)
		v.Store.Usage = v.Store.Usage.Add(t.Usage)
		v.Store.BucketBytes += t.BucketBytes
		monthTotal = monthTotal.Add(perMonth[ts.Name])
		v.Topics = append(v.Topics, t)
	}
	slices.SortFunc(v.Topics, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	v.Store.PutsPerGiB = ratio(v.Store.Usage)
	v.Store.MonthlyCost = prices.MonthlyCost(monthTotal, v.Store.BucketBytes)
	v.Store.Diskless, v.Store.Replication = costs.total(v.Topics)
	for _, a := range agents {
		l, reporting := locals[a.ID]
		agent := Agent{AgentInfo: a, Replicas: replicas[a.ID], Leaders: leading[a.ID], Reporting: reporting}
		if reporting && l != nil {
			agent.Load = l.Load
		}
		v.Agents = append(v.Agents, agent)
	}
	slices.SortFunc(v.Agents, func(a, b Agent) int { return cmp.Compare(a.ID, b.ID) })
	v.Counts.Agents = len(v.Agents)
	if v.Topics == nil {
		v.Topics = []Topic{}
	}
	v.Counts.Topics, v.Counts.Groups = len(v.Topics), len(v.Groups)
	v.Listed = listedAll(&v)
	return v
}

func ratio(u tiering.TopicUsage) *float64 {
	if r, ok := u.PutsPerGiB(); ok {
		return &r
	}
	return nil
}

// partitionKey names a partition in maps.
type partitionKey struct {
	topic string
	index int32
}
