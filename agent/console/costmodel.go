package console

// The cost model of docs/design.md §7a: what a diskless topic pays in
// commit-object PUTs, beside what a classic topic pays in replication
// bytes between zones. Both lines come from counters every agent reports
// (Local), summed over agents:
//
//	diskless, measured   strata_diskless_topic_puts_total{topic}   the topic's shares of the objects' PUTs
//	                     strata_diskless_topic_bytes_total{topic}  its bytes in them
//	diskless, predicted  max(1/T, r/C) PUTs a second for an agent taking r bytes a second,
//	                     1 GiB / min(C, r·T) per GiB (T, C: the agent's commit interval and bytes),
//	                     split among topics as the agent's bytes are
//	classic              strata_replica_copied_bytes_total{topic}  bytes its followers copied
//
// Each agent reports what its counters gained over its last minute
// (RecentCost, from snapshots its HTTP server takes every 5 s), with its
// own prediction for it slot by slot; the console divides by that
// window. An agent that reports no window yet (or an older agent) counts
// since it started, as the store's monthly estimate does, its prediction
// then at its mean rate.

import (
	"math"
	"time"
)

// CommitSettings are an agent's --diskless-commit-interval and
// --diskless-commit-bytes, which predict its commit-object PUTs.
type CommitSettings struct {
	IntervalSeconds float64 `json:"interval_seconds"`
	Bytes           int64   `json:"bytes"`
}

// known reports whether c can predict: an agent that did not report its
// settings (an older version) predicts nothing.
func (c CommitSettings) known() bool { return c.IntervalSeconds > 0 && c.Bytes > 0 }

// PutsPerSecond is the commit-object PUTs a second of an agent taking r
// bytes a second of diskless produce: it cuts an object every interval,
// or sooner when commit bytes fill, so max(1/T, r/C); none when idle.
func (c CommitSettings) PutsPerSecond(r float64) float64 {
	if r <= 0 || !c.known() {
		return 0
	}
	return math.Max(1/c.IntervalSeconds, r/float64(c.Bytes))
}

// PutsPerGiB is the commit-object PUTs per GiB of such an agent: each
// object holds min(C, r·T) bytes. False when it takes nothing.
func (c CommitSettings) PutsPerGiB(r float64) (float64, bool) {
	if r <= 0 || !c.known() {
		return 0, false
	}
	return (1 << 30) / math.Min(float64(c.Bytes), r*c.IntervalSeconds), true
}

// CostCounters are an agent's counters of the cost model, by topic: its
// commit objects' shares (strata_diskless_topic_puts_total and
// _bytes_total) and its followers' copies
// (strata_replica_copied_bytes_total).
type CostCounters struct {
	Diskless      map[string]DisklessUsage `json:"diskless"`
	ReplicaCopied map[string]float64       `json:"replica_copied_bytes"`
}

// DisklessUsage is a topic's share of one agent's commit objects.
type DisklessUsage struct {
	Puts  float64 `json:"puts"`
	Bytes float64 `json:"bytes"`
}

// CostSnapshot is an agent's CostCounters at one moment.
type CostSnapshot struct {
	At time.Time
	CostCounters
}

// RecentCost is what an agent's cost counters gained over its last
// minute or so, and the commit-object PUTs its settings predict for the
// same bytes.
type RecentCost struct {
	Seconds float64 `json:"seconds"`
	// Counters are the changes, by topic.
	Counters CostCounters `json:"counters"`
	// PredictedPuts are the predicted PUTs over those seconds, by topic.
	PredictedPuts map[string]float64 `json:"predicted_puts"`
}

// Recent is what changed between the first and the last of snaps, in
// time order, with the PUTs c predicts: slot by slot (between two
// snapshots) at the agent's bytes a second in that slot, each topic
// taking its share of the slot's PUTs by its bytes in it. An agent that
// took 64 MiB in one second of a minute made a handful of PUTs, not four
// a second all minute, which a prediction at the minute's mean rate
// would say. Nil for fewer than two snapshots or no time between them.
func (c CommitSettings) Recent(snaps []CostSnapshot) *RecentCost {
	if len(snaps) < 2 {
		return nil
	}
	first, last := snaps[0], snaps[len(snaps)-1]
	seconds := last.At.Sub(first.At).Seconds()
	if seconds <= 0 {
		return nil
	}
	r := &RecentCost{Seconds: seconds, PredictedPuts: map[string]float64{},
		Counters: CostCounters{Diskless: map[string]DisklessUsage{}, ReplicaCopied: map[string]float64{}}}
	for topic, u := range last.Diskless {
		was := first.Diskless[topic]
		r.Counters.Diskless[topic] = DisklessUsage{Puts: math.Max(u.Puts-was.Puts, 0), Bytes: math.Max(u.Bytes-was.Bytes, 0)}
	}
	for topic, b := range last.ReplicaCopied {
		r.Counters.ReplicaCopied[topic] = math.Max(b-first.ReplicaCopied[topic], 0)
	}
	for i := 1; i < len(snaps); i++ {
		dt := snaps[i].At.Sub(snaps[i-1].At).Seconds()
		if dt <= 0 {
			continue
		}
		gained, total := map[string]float64{}, 0.0
		for topic, u := range snaps[i].Diskless {
			if b := u.Bytes - snaps[i-1].Diskless[topic].Bytes; b > 0 {
				gained[topic] = b
				total += b
			}
		}
		puts := c.PutsPerSecond(total/dt) * dt
		for topic, b := range gained {
			r.PredictedPuts[topic] += puts * b / total
		}
	}
	return r
}

// DisklessCost is a diskless topic's commit-object PUTs, measured and
// predicted, summed over agents.
type DisklessCost struct {
	// BytesPerSecond is the topic's bytes put into commit objects.
	BytesPerSecond float64 `json:"bytes_per_second"`
	// PutsPerSecond and PutsPerGiB are measured: the topic's shares of
	// the PUTs of the objects that held its batches. PutsPerGiB is absent
	// before a byte was.
	PutsPerSecond float64  `json:"puts_per_second"`
	PutsPerGiB    *float64 `json:"puts_per_gib,omitempty"`
	// PredictedPutsPerSecond and PredictedPutsPerGiB are what each
	// agent's commit settings predict at its diskless bytes a second,
	// the topic taking its share of the agent's PUTs by bytes.
	PredictedPutsPerSecond float64  `json:"predicted_puts_per_second"`
	PredictedPutsPerGiB    *float64 `json:"predicted_puts_per_gib,omitempty"`
	// MonthlyPutCost and PredictedMonthlyPutCost are 30 days of those
	// PUTs at --cost-put-per-1000.
	MonthlyPutCost          float64 `json:"monthly_put_cost"`
	PredictedMonthlyPutCost float64 `json:"predicted_monthly_put_cost"`
}

// ReplicationCost is what a classic topic's followers copy from their
// leaders, summed over agents.
type ReplicationCost struct {
	BytesPerSecond float64 `json:"bytes_per_second"`
	// MonthlyCost is 30 days of those bytes at --cost-cross-zone-per-gb:
	// their price when racks are zones, so every copy crosses one.
	MonthlyCost float64 `json:"monthly_cost"`
}

// costModel sums the agents' reports into each topic's cost line.
type costModel struct {
	prices      Prices
	diskless    map[string]*DisklessCost // by topic: its rates, summed over agents
	bytes, puts map[string]float64       // by topic: its counts over each agent's window, summed
	replication map[string]float64       // by topic: bytes copied a second
}

// newCostModel sums the agents' lines: over each agent's recent window
// where it reports one, else since it started, the prediction then at
// its mean rate.
func newCostModel(prices Prices, locals map[int32]*Local) *costModel {
	m := &costModel{prices: prices, diskless: map[string]*DisklessCost{}, bytes: map[string]float64{},
		puts: map[string]float64{}, replication: map[string]float64{}}
	for _, l := range locals {
		seconds, counters, predicted := l.UptimeSeconds, l.Cost, map[string]float64{}
		if r := l.RecentCost; r != nil && r.Seconds > 0 {
			seconds, counters, predicted = r.Seconds, r.Counters, r.PredictedPuts
		} else if seconds > 0 {
			var agentRate float64 // all diskless topics' bytes a second on this agent
			for _, u := range counters.Diskless {
				agentRate += u.Bytes / seconds
			}
			agentPuts := l.DisklessCommit.PutsPerSecond(agentRate) * seconds
			for topic, u := range counters.Diskless {
				if agentRate > 0 {
					predicted[topic] = agentPuts * (u.Bytes / seconds) / agentRate
				}
			}
		}
		if seconds <= 0 {
			continue
		}
		for topic, b := range counters.ReplicaCopied {
			m.replication[topic] += b / seconds
		}
		for topic, u := range counters.Diskless {
			d := m.topic(topic)
			d.BytesPerSecond += u.Bytes / seconds
			d.PutsPerSecond += u.Puts / seconds
			d.PredictedPutsPerSecond += predicted[topic] / seconds
			m.bytes[topic] += u.Bytes
			m.puts[topic] += u.Puts
		}
	}
	return m
}

func (m *costModel) topic(name string) *DisklessCost {
	d := m.diskless[name]
	if d == nil {
		d = &DisklessCost{}
		m.diskless[name] = d
	}
	return d
}

// disklessCost is the diskless line of topic.
func (m *costModel) disklessCost(topic string) *DisklessCost {
	d := *m.topic(topic)
	d.PutsPerGiB = perGiB(m.puts[topic], m.bytes[topic])
	m.finish(&d)
	return &d
}

// finish derives d's ratios and prices from its rates (PutsPerGiB, from
// counts, is the caller's).
func (m *costModel) finish(d *DisklessCost) {
	d.PredictedPutsPerGiB = perGiB(d.PredictedPutsPerSecond, d.BytesPerSecond)
	d.MonthlyPutCost = m.prices.MonthlyPutCost(d.PutsPerSecond)
	d.PredictedMonthlyPutCost = m.prices.MonthlyPutCost(d.PredictedPutsPerSecond)
}

// replicationCost is the classic line of topic.
func (m *costModel) replicationCost(topic string) *ReplicationCost {
	r := m.replication[topic]
	return &ReplicationCost{BytesPerSecond: r, MonthlyCost: m.prices.MonthlyCrossZoneCost(r)}
}

// total sums the lines of the topics listed (each once).
func (m *costModel) total(topics []Topic) (DisklessCost, ReplicationCost) {
	var d DisklessCost
	var r ReplicationCost
	var puts, bytes float64
	for _, t := range topics {
		if t.DisklessCost != nil {
			d.BytesPerSecond += t.DisklessCost.BytesPerSecond
			d.PutsPerSecond += t.DisklessCost.PutsPerSecond
			d.PredictedPutsPerSecond += t.DisklessCost.PredictedPutsPerSecond
			puts, bytes = puts+m.puts[t.Name], bytes+m.bytes[t.Name]
		}
		if t.Replication != nil {
			r.BytesPerSecond += t.Replication.BytesPerSecond
		}
	}
	d.PutsPerGiB = perGiB(puts, bytes)
	m.finish(&d)
	r.MonthlyCost = m.prices.MonthlyCrossZoneCost(r.BytesPerSecond)
	return d, r
}

// perGiB is puts per GiB of bytes; nil without bytes.
func perGiB(puts, bytes float64) *float64 {
	if bytes <= 0 {
		return nil
	}
	r := puts / (bytes / (1 << 30))
	return &r
}
