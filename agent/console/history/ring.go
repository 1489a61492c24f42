// Package history keeps an agent's recent numbers for the console's
// charts: a ring of points, one per Resolution (5 s), the last Points of
// them (720: an hour), in memory only. Prometheus, scraping /metrics, is
// the long-term store; this is what the console draws without one.
//
//	agent's counters ──Sample──> Ring.Add ──rates──> the ring
//	GET /v1/console/history/agent   Ring.Since      one agent's series (Agent)
//	GET /v1/console/history         Merge           the cluster's (View)
//
// A Sample is cumulative (counters since the agent started, and gauges);
// Add turns counters into rates from the change since the previous
// sample, and histograms into the percentiles of the interval, so the
// ring holds what a chart shows. Each agent samples what it alone knows
// (its topics' traffic, its store requests, its latency, the high
// watermarks of the partitions it leads, the committed offsets of the
// groups it coordinates); Merge sums the agents' series slot by slot,
// and computes a group's lag as the leader's high watermark minus the
// coordinator's committed offset at the same slot. Points are at wall
// clock multiples of Resolution, so the agents' slots line up.
//
// # Memory
//
//	times   [Points]int64          unix milliseconds, a ring (start, n)
//	series  map[Key]*series        per series one of
//	          values [Points]float32    rates and gauges, NaN for none
//	          base int64, deltas [Points]int32   offsets, exact
//
// A series costs Points × 4 bytes (2.8 KiB for an hour at 5 s) and is
// made when its metric and labels first appear. What bounds the number
// of series: topics past MaxTopics are summed into one series named
// OtherTopics; high watermarks past MaxPartitions and committed offsets
// past MaxGroupPartitions are not kept, and Dropped says how many; the
// store's series are by operation, a fixed set. A series none of whose
// points is left in the ring is dropped. Bytes estimates the total, and
// the test with 1,000 partitions checks it against the heap.
//
// # Concurrency
//
// A Ring is not safe for concurrent use: its owner (agent/httpapi) holds
// a mutex around Add and Since. Merge and the types are pure data.
package history

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
	"unsafe"
)

// Config bounds a Ring.
type Config struct {
	// Resolution is the time between points.
	Resolution time.Duration
	// Points is how many points a series keeps: Points × Resolution is
	// the history's length.
	Points int
	// MaxTopics is the topics with series of their own; the traffic of
	// the rest is summed as OtherTopics.
	MaxTopics int
	// MaxPartitions is the high watermarks kept (of partitions led here).
	MaxPartitions int
	// MaxGroupPartitions is the committed offsets kept (of the groups
	// coordinated here), one per group and partition.
	MaxGroupPartitions int
}

// DefaultConfig is an hour at 5 s, for a few MB at most.
func DefaultConfig() Config {
	return Config{Resolution: 5 * time.Second, Points: 720, MaxTopics: 100, MaxPartitions: 1000, MaxGroupPartitions: 1000}
}

// Validate names the first setting out of range.
func (c Config) Validate() error {
	switch {
	case c.Resolution < time.Millisecond:
		return fmt.Errorf("history: Resolution %v: want 1ms or more", c.Resolution)
	case c.Points < 2:
		return fmt.Errorf("history: Points %d: want 2 or more", c.Points)
	case c.MaxTopics < 0 || c.MaxPartitions < 0 || c.MaxGroupPartitions < 0:
		return errors.New("history: a negative Max")
	}
	return nil
}

// Metrics, the Metric of a Key.
const (
	// Per topic (Key.Topic), per second: record batch bytes and records
	// produced, and fetched by consumers (strata_topic_bytes_out_total
	// does not count follower replicas' fetches either).
	TopicBytesIn    = "topic_bytes_in"
	TopicBytesOut   = "topic_bytes_out"
	TopicRecordsIn  = "topic_records_in"
	TopicRecordsOut = "topic_records_out"
	// StoreRequests is store requests per second, by operation
	// (Key.Label: get, get_range, put, delete, stat, list).
	StoreRequests = "store_requests"
	// StoreBytes is object bytes per second, Key.Label write or read.
	StoreBytes = "store_bytes"
	// BucketBytes is the bucket bytes of the partitions led here.
	BucketBytes = "bucket_bytes"
	// ProduceP50, ProduceP99 and ProduceP999 are percentiles of the time
	// Produce requests took in the interval, in seconds; no value when
	// there was none.
	ProduceP50  = "produce_p50_seconds"
	ProduceP99  = "produce_p99_seconds"
	ProduceP999 = "produce_p999_seconds"
	// Fsyncs is segment fsyncs per second; FsyncMean their mean time in
	// the interval, in seconds.
	Fsyncs    = "fsyncs"
	FsyncMean = "fsync_mean_seconds"
	// ISRShrinks is the ISR shrinks this agent wrote as leader in the
	// interval (a count, not a rate).
	ISRShrinks = "isr_shrinks"
	// HighWatermark is a partition's high watermark (Key.Topic,
	// Key.Partition), sampled on its leader.
	HighWatermark = "high_watermark"
	// Committed is a group's committed offset (Key.Group, Key.Topic,
	// Key.Partition), sampled on its coordinator.
	Committed = "committed"
)

// OtherTopics is the topic under which the traffic of topics past
// MaxTopics is summed; no Kafka topic name has parentheses.
const OtherTopics = "(other topics)"

var topicMetrics = []string{TopicBytesIn, TopicBytesOut, TopicRecordsIn, TopicRecordsOut}

// Sample is an agent's numbers at one moment: counters since it started,
// and gauges.
type Sample struct {
	At     time.Time
	Topics map[string]TopicCounters
	// StoreRequests is requests by operation, every outcome
	// (strata_store_requests_total); StoreBytes is bytes by direction,
	// write or read (strata_store_bytes_total).
	StoreRequests map[string]float64
	StoreBytes    map[string]float64
	// BucketBytes is a gauge: the bucket bytes of the partitions led here.
	BucketBytes float64
	// ProduceLatency is the Produce histogram of
	// strata_kafka_request_duration_seconds.
	ProduceLatency Histogram
	// Fsyncs and FsyncSeconds sum every partition's (strata_partition_
	// fsyncs_total, _fsync_seconds_total); ISRShrinks is
	// strata_isr_changes_total{op="shrink"}.
	Fsyncs, FsyncSeconds, ISRShrinks float64
	// HighWatermarks are gauges of the partitions led here, Committed of
	// the groups coordinated here.
	HighWatermarks map[Partition]int64
	Committed      map[GroupPartition]int64
}

// TopicCounters are a topic's counters on one agent.
type TopicCounters struct {
	BytesIn, BytesOut, RecordsIn, RecordsOut float64
}

// Histogram is a cumulative Prometheus histogram: Cumulative[i] counts
// the observations of at most Bounds[i]; Count counts all of them.
type Histogram struct {
	Bounds, Cumulative []float64
	Count              float64
}

// Partition names a partition.
type Partition struct {
	Topic string
	Index int32
}

// GroupPartition names a group's partition.
type GroupPartition struct {
	Group string
	Partition
}

// Dropped counts what the caps kept out of the ring at the last sample.
type Dropped struct {
	// Topics summed as OtherTopics.
	Topics int `json:"topics"`
	// Partitions whose high watermark, and group partitions whose
	// committed offset, were not kept.
	Partitions      int `json:"partitions"`
	GroupPartitions int `json:"group_partitions"`
}

// Ring is an agent's history (see the package comment).
type Ring struct {
	cfg      Config
	times    []int64 // unix ms, times[(start+i)%Points] the i-th oldest
	start, n int
	seq      uint64 // counts points added; the newest is seq
	series   map[Key]*series
	perKind  map[string]int // series of each capped metric
	prev     *Sample        // counters of the last sample, for rates
	dropped  Dropped
}

// NewRing returns an empty ring; cfg must be valid.
func NewRing(cfg Config) *Ring {
	if err := cfg.Validate(); err != nil {
		panic(err) // the caller's constant
	}
	return &Ring{cfg: cfg, times: make([]int64, cfg.Points), series: map[Key]*series{}, perKind: map[string]int{}}
}

// Config is the ring's.
func (r *Ring) Config() Config { return r.cfg }

// Slot is the start of the Resolution-long slot t falls in, in unix ms.
func (c Config) Slot(t time.Time) int64 {
	ms, res := t.UnixMilli(), c.Resolution.Milliseconds()
	return ms - ((ms%res)+res)%res
}

// Add turns s into a point at s's slot: a new point, or the newest one
// again when s is in its slot (or earlier: a clock that went back).
func (r *Ring) Add(s Sample) {
	slot := r.cfg.Slot(s.At)
	var pos int
	if r.n > 0 && slot <= r.times[r.last()] {
		pos = r.last()
	} else {
		r.seq++
		if r.n < r.cfg.Points {
			pos = (r.start + r.n) % r.cfg.Points
			r.n++
		} else {
			pos = r.start
			r.start = (r.start + 1) % r.cfg.Points
		}
		r.times[pos] = slot
	}
	for _, ser := range r.series {
		ser.clear(pos)
	}
	r.collect() // before the new values, so that the places it frees are used
	r.dropped = Dropped{}
	r.addRates(pos, s)
	r.addGauges(pos, s)
	r.prev = &Sample{At: s.At, Topics: s.Topics, StoreRequests: s.StoreRequests, StoreBytes: s.StoreBytes,
		ProduceLatency: s.ProduceLatency, Fsyncs: s.Fsyncs, FsyncSeconds: s.FsyncSeconds, ISRShrinks: s.ISRShrinks}
}

func (r *Ring) last() int { return (r.start + r.n - 1) % r.cfg.Points }

// addRates writes the counters' rates since the previous sample; none at
// the first sample, or after a clock that did not advance.
func (r *Ring) addRates(pos int, s Sample) {
	p := r.prev
	if p == nil || !s.At.After(p.At) {
		return
	}
	dt := s.At.Sub(p.At).Seconds()
	rate := func(cur, prev float64) float64 { return Delta(cur, prev) / dt }

	// Topics, in name order so that which get series of their own past
	// the cap does not depend on map order.
	other := map[string]float64{}
	for _, name := range slices.Sorted(maps.Keys(s.Topics)) {
		cur, prev := s.Topics[name], p.Topics[name]
		values := []float64{rate(cur.BytesIn, prev.BytesIn), rate(cur.BytesOut, prev.BytesOut),
			rate(cur.RecordsIn, prev.RecordsIn), rate(cur.RecordsOut, prev.RecordsOut)}
		if !r.room(Key{Metric: TopicBytesIn, Topic: name, Partition: -1}) {
			r.dropped.Topics++
			for i, m := range topicMetrics {
				if !math.IsNaN(values[i]) {
					other[m] += values[i]
				}
			}
			continue
		}
		for i, m := range topicMetrics {
			r.put(pos, Key{Metric: m, Topic: name, Partition: -1}, values[i])
		}
	}
	for m, v := range other {
		r.put(pos, Key{Metric: m, Topic: OtherTopics, Partition: -1}, v)
	}
	for op, v := range s.StoreRequests {
		r.put(pos, Key{Metric: StoreRequests, Partition: -1, Label: op}, rate(v, p.StoreRequests[op]))
	}
	for dir, v := range s.StoreBytes {
		r.put(pos, Key{Metric: StoreBytes, Partition: -1, Label: dir}, rate(v, p.StoreBytes[dir]))
	}
	for m, q := range map[string]float64{ProduceP50: 0.5, ProduceP99: 0.99, ProduceP999: 0.999} {
		r.put(pos, Key{Metric: m, Partition: -1}, IntervalQuantile(q, s.ProduceLatency, p.ProduceLatency))
	}
	fsyncs := Delta(s.Fsyncs, p.Fsyncs)
	r.put(pos, Key{Metric: Fsyncs, Partition: -1}, fsyncs/dt)
	if fsyncs > 0 {
		r.put(pos, Key{Metric: FsyncMean, Partition: -1}, Delta(s.FsyncSeconds, p.FsyncSeconds)/fsyncs)
	}
	r.put(pos, Key{Metric: ISRShrinks, Partition: -1}, Delta(s.ISRShrinks, p.ISRShrinks))
}

// addGauges writes the gauges: bucket bytes and offsets.
func (r *Ring) addGauges(pos int, s Sample) {
	r.put(pos, Key{Metric: BucketBytes, Partition: -1}, s.BucketBytes)
	hws := slices.SortedFunc(maps.Keys(s.HighWatermarks), comparePartitions)
	for _, p := range hws {
		k := Key{Metric: HighWatermark, Topic: p.Topic, Partition: p.Index}
		if !r.room(k) {
			r.dropped.Partitions++
			continue
		}
		r.put(pos, k, float64(s.HighWatermarks[p]))
	}
	gps := slices.SortedFunc(maps.Keys(s.Committed), func(a, b GroupPartition) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), comparePartitions(a.Partition, b.Partition))
	})
	for _, gp := range gps {
		k := Key{Metric: Committed, Topic: gp.Topic, Partition: gp.Index, Group: gp.Group}
		if !r.room(k) {
			r.dropped.GroupPartitions++
			continue
		}
		r.put(pos, k, float64(s.Committed[gp]))
	}
}

func comparePartitions(a, b Partition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Index, b.Index))
}

// room reports whether k has a series or may get one under its cap.
func (r *Ring) room(k Key) bool {
	if _, ok := r.series[k]; ok {
		return true
	}
	limit := -1
	switch k.Metric {
	case TopicBytesIn, TopicBytesOut, TopicRecordsIn, TopicRecordsOut:
		limit = r.cfg.MaxTopics
	case HighWatermark:
		limit = r.cfg.MaxPartitions
	case Committed:
		limit = r.cfg.MaxGroupPartitions
	}
	return limit < 0 || r.perKind[k.Metric] < limit
}

// put sets k's value at pos, making its series if need be; NaN sets
// nothing.
func (r *Ring) put(pos int, k Key, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	s, ok := r.series[k]
	if !ok {
		s = newSeries(r.cfg.Points, k.Metric == HighWatermark || k.Metric == Committed)
		r.series[k] = s
		if k.Topic != OtherTopics {
			r.perKind[k.Metric]++
		}
	}
	s.set(pos, v)
	s.lastSeq = r.seq
}

// collect drops the series with no value left in the ring: the newest
// point (seq) is Add's, about to be written, and the oldest is seq-n+1.
func (r *Ring) collect() {
	for k, s := range r.series {
		if r.seq-s.lastSeq >= uint64(r.n) {
			delete(r.series, k)
			if k.Topic != OtherTopics {
				r.perKind[k.Metric]--
			}
		}
	}
}

// Len is the points held.
func (r *Ring) Len() int { return r.n }

// Series is the series held.
func (r *Ring) Series() int { return len(r.series) }

// Bytes estimates the heap the ring holds: its arrays, its series with
// their keys, and the previous sample's counters.
func (r *Ring) Bytes() int64 {
	n := int64(unsafe.Sizeof(*r)) + int64(len(r.times))*8
	for k, s := range r.series {
		n += s.bytes(k)
	}
	if p := r.prev; p != nil {
		const entry = 48 // a map entry's share: key header, value, buckets
		for name := range p.Topics {
			n += entry + int64(len(name)) + int64(unsafe.Sizeof(TopicCounters{}))
		}
		n += int64(len(p.StoreRequests)+len(p.StoreBytes)) * (entry + 8)
		n += int64(len(p.ProduceLatency.Bounds)+len(p.ProduceLatency.Cumulative)) * 8
	}
	return n
}

// Dropped is what the caps kept out at the last sample.
func (r *Ring) Dropped() Dropped { return r.dropped }

// Agent is one agent's history as GET /v1/console/history/agent sends it.
type Agent struct {
	AgentID           int32   `json:"agent_id"`
	ResolutionSeconds float64 `json:"resolution_seconds"`
	// Times are the points' slots, unix milliseconds, oldest first.
	Times  []int64  `json:"times"`
	Series []Series `json:"series"`
	// Dropped is what the caps kept out at the last sample; RingBytes
	// and RingSeries are the ring's size.
	Dropped    Dropped `json:"dropped"`
	RingBytes  int64   `json:"ring_bytes"`
	RingSeries int     `json:"ring_series"`
}

// Series is one series of an Agent, with a value for each of its Times.
type Series struct {
	Metric    string `json:"metric"`
	Topic     string `json:"topic,omitempty"`
	Partition *int32 `json:"partition,omitempty"`
	Group     string `json:"group,omitempty"`
	Label     string `json:"label,omitempty"`
	Values    Values `json:"values"`
}

// Key is the series' key.
func (s Series) Key() Key {
	k := Key{Metric: s.Metric, Topic: s.Topic, Partition: -1, Group: s.Group, Label: s.Label}
	if s.Partition != nil {
		k.Partition = *s.Partition
	}
	return k
}

// Since is the points after since (unix ms), and the series with a value
// among them, in key order.
func (r *Ring) Since(since int64) Agent {
	a := Agent{ResolutionSeconds: r.cfg.Resolution.Seconds(), Times: []int64{}, Series: []Series{},
		Dropped: r.dropped, RingBytes: r.Bytes(), RingSeries: len(r.series)}
	var positions []int
	for i := range r.n {
		pos := (r.start + i) % r.cfg.Points
		if r.times[pos] > since {
			positions = append(positions, pos)
			a.Times = append(a.Times, r.times[pos])
		}
	}
	keys := slices.SortedFunc(maps.Keys(r.series), func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Metric, b.Metric), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Label, b.Label))
	})
	for _, k := range keys {
		s := r.series[k]
		v := make(Values, len(positions))
		for i, pos := range positions {
			v[i] = s.at(pos)
		}
		if !v.known() {
			continue
		}
		out := Series{Metric: k.Metric, Topic: k.Topic, Group: k.Group, Label: k.Label, Values: v}
		if k.Partition >= 0 {
			p := k.Partition
			out.Partition = &p
		}
		a.Series = append(a.Series, out)
	}
	return a
}
