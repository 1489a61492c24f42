package history

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/strata-streaming/strata/agent/console"
)

// View is the cluster's history as GET /v1/console/history sends it:
// every series on one timeline, NaN (null) where no agent had a value.
type View struct {
	ServedBy          int32   `json:"served_by"`
	ResolutionSeconds float64 `json:"resolution_seconds"`
	// Times are the slots of every agent's points, unix ms, oldest first.
	Times  []int64       `json:"times"`
	Topics []TopicSeries `json:"topics"`
	Groups []GroupSeries `json:"groups"`
	Store  StoreSeries   `json:"store"`
	Agents []AgentSeries `json:"agents"`
	// Prices are the serving agent's, which the costs are at.
	Prices console.Prices `json:"prices"`
	// Notes say what the caps left out; Errors which agents' history
	// did not arrive (their share of every sum is missing).
	Notes  []string `json:"notes"`
	Errors []string `json:"errors"`
}

// TopicSeries is a topic's traffic summed over agents, per second.
type TopicSeries struct {
	Name       string `json:"name"`
	Internal   bool   `json:"internal"`
	BytesIn    Values `json:"bytes_in"`
	BytesOut   Values `json:"bytes_out"`
	RecordsIn  Values `json:"records_in"`
	RecordsOut Values `json:"records_out"`
}

// GroupSeries is a group's lag: per partition, the partition's high
// watermark on its leader minus the group's committed offset on its
// coordinator (at least 0), and their sum.
type GroupSeries struct {
	Name       string         `json:"name"`
	TotalLag   Values         `json:"total_lag"`
	Partitions []PartitionLag `json:"partitions"`
}

// PartitionLag is one partition's lag for a group.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Lag       Values `json:"lag"`
}

// StoreSeries is the store traffic summed over agents, and its cost.
type StoreSeries struct {
	// Requests is requests per second by operation.
	Requests map[string]Values `json:"requests"`
	// WriteBytes and ReadBytes are object bytes per second.
	WriteBytes Values `json:"write_bytes"`
	ReadBytes  Values `json:"read_bytes"`
	// BucketBytes is the bucket bytes of every partition.
	BucketBytes Values `json:"bucket_bytes"`
	// RequestCost and StorageCost are the estimated cost per hour of
	// the requests at each point's rate, and of the bucket bytes held
	// for an hour, at the serving agent's prices; Cost is their sum.
	RequestCost Values `json:"request_cost_per_hour"`
	StorageCost Values `json:"storage_cost_per_hour"`
	Cost        Values `json:"cost_per_hour"`
}

// AgentSeries is one agent's own numbers.
type AgentSeries struct {
	ID          int32   `json:"id"`
	ProduceP50  Values  `json:"produce_p50_seconds"`
	ProduceP99  Values  `json:"produce_p99_seconds"`
	ProduceP999 Values  `json:"produce_p999_seconds"`
	Fsyncs      Values  `json:"fsyncs"`
	FsyncMean   Values  `json:"fsync_mean_seconds"`
	ISRShrinks  Values  `json:"isr_shrinks"`
	RingBytes   int64   `json:"ring_bytes"`
	RingSeries  int     `json:"ring_series"`
	Dropped     Dropped `json:"dropped"`
}

// Store operations by billing class, as S3 bills them: LIST at the PUT
// price, HEAD (stat) at the GET price, DELETE free.
var (
	putClass = []string{"put", "list"}
	getClass = []string{"get", "get_range", "stat"}
)

// hoursPerMonth is the month of console.Prices.StorageGBMonth (30 days).
const hoursPerMonth = 30 * 24

// Merge puts the agents' histories on one timeline (the union of their
// slots) and sums them: topics and the store over agents, a group's lag
// from the leaders' high watermarks and the coordinators' committed
// offsets. internal names the internal topics; prices are the serving
// agent's; errs are problems met while gathering, kept as they are.
func Merge(self int32, agents []Agent, internal map[string]bool, prices console.Prices, errs []string) View {
	v := View{ServedBy: self, Times: []int64{}, Topics: []TopicSeries{}, Groups: []GroupSeries{}, Agents: []AgentSeries{},
		Notes: []string{}, Errors: append([]string{}, errs...), Store: StoreSeries{Requests: map[string]Values{}}, Prices: prices}
	at := map[int64]int{}
	for _, a := range agents {
		if v.ResolutionSeconds == 0 {
			v.ResolutionSeconds = a.ResolutionSeconds
		}
		for _, t := range a.Times {
			at[t] = 0
		}
	}
	v.Times = slices.Sorted(maps.Keys(at))
	for i, t := range v.Times {
		at[t] = i
	}
	n := len(v.Times)
	fresh := func() Values { return missingValues(n) }
	// combine folds an agent's values into dst at the merged positions.
	combine := func(dst Values, a Agent, src Values, fold func(old, x float64) float64) {
		for j, x := range src {
			if j >= len(a.Times) || math.IsNaN(x) {
				continue
			}
			i := at[a.Times[j]]
			if math.IsNaN(dst[i]) {
				dst[i] = x
			} else {
				dst[i] = fold(dst[i], x)
			}
		}
	}
	sum := func(a, b float64) float64 { return a + b }

	topics := map[string]*TopicSeries{}
	highWatermarks := map[Partition]Values{}
	committed := map[GroupPartition]Values{}
	for _, a := range agents {
		as := AgentSeries{ID: a.AgentID, ProduceP50: fresh(), ProduceP99: fresh(), ProduceP999: fresh(), Fsyncs: fresh(),
			FsyncMean: fresh(), ISRShrinks: fresh(), RingBytes: a.RingBytes, RingSeries: a.RingSeries, Dropped: a.Dropped}
		for _, s := range a.Series {
			if len(s.Values) != len(a.Times) {
				v.Errors = append(v.Errors, fmt.Sprintf("agent %d: series %s has %d values for %d times", a.AgentID, s.Metric, len(s.Values), len(a.Times)))
				continue
			}
			var dst Values
			fold := sum
			switch s.Metric {
			case TopicBytesIn, TopicBytesOut, TopicRecordsIn, TopicRecordsOut:
				t := topics[s.Topic]
				if t == nil {
					t = &TopicSeries{Name: s.Topic, Internal: internal[s.Topic], BytesIn: fresh(), BytesOut: fresh(), RecordsIn: fresh(), RecordsOut: fresh()}
					topics[s.Topic] = t
				}
				dst = map[string]Values{TopicBytesIn: t.BytesIn, TopicBytesOut: t.BytesOut, TopicRecordsIn: t.RecordsIn, TopicRecordsOut: t.RecordsOut}[s.Metric]
			case StoreRequests:
				if v.Store.Requests[s.Label] == nil {
					v.Store.Requests[s.Label] = fresh()
				}
				dst = v.Store.Requests[s.Label]
			case StoreBytes:
				if v.Store.WriteBytes == nil {
					v.Store.WriteBytes, v.Store.ReadBytes = fresh(), fresh()
				}
				switch s.Label {
				case "write":
					dst = v.Store.WriteBytes
				case "read":
					dst = v.Store.ReadBytes
				}
			case BucketBytes:
				if v.Store.BucketBytes == nil {
					v.Store.BucketBytes = fresh()
				}
				dst = v.Store.BucketBytes
			case ProduceP50:
				dst = as.ProduceP50
			case ProduceP99:
				dst = as.ProduceP99
			case ProduceP999:
				dst = as.ProduceP999
			case Fsyncs:
				dst = as.Fsyncs
			case FsyncMean:
				dst = as.FsyncMean
			case ISRShrinks:
				dst = as.ISRShrinks
			case HighWatermark, Committed:
				// Two agents report one partition only around a change of
				// leader or coordinator; the higher offset is the newer.
				fold = math.Max
				p := Partition{s.Topic, s.Key().Partition}
				if s.Metric == HighWatermark {
					if highWatermarks[p] == nil {
						highWatermarks[p] = fresh()
					}
					dst = highWatermarks[p]
				} else {
					gp := GroupPartition{s.Group, p}
					if committed[gp] == nil {
						committed[gp] = fresh()
					}
					dst = committed[gp]
				}
			}
			if dst != nil {
				combine(dst, a, s.Values, fold)
			}
		}
		v.Agents = append(v.Agents, as)
		v.Notes = append(v.Notes, droppedNotes(a.AgentID, a.Dropped)...)
	}
	slices.SortFunc(v.Agents, func(a, b AgentSeries) int { return cmp.Compare(a.ID, b.ID) })
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		v.Topics = append(v.Topics, *topics[name])
	}
	v.Groups = groupLags(committed, highWatermarks, n)
	v.Store.priceAt(prices, n)
	return v
}

// groupLags is each group's lag per partition and in total.
func groupLags(committed map[GroupPartition]Values, highWatermarks map[Partition]Values, n int) []GroupSeries {
	groups := map[string]*GroupSeries{}
	keys := slices.SortedFunc(maps.Keys(committed), func(a, b GroupPartition) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), comparePartitions(a.Partition, b.Partition))
	})
	for _, gp := range keys {
		g := groups[gp.Group]
		if g == nil {
			g = &GroupSeries{Name: gp.Group, TotalLag: missingValues(n), Partitions: []PartitionLag{}}
			groups[gp.Group] = g
		}
		lag := missingValues(n)
		hw, c := highWatermarks[gp.Partition], committed[gp]
		for i := range lag {
			if hw == nil || math.IsNaN(hw[i]) || math.IsNaN(c[i]) {
				continue
			}
			lag[i] = max(hw[i]-c[i], 0)
			if math.IsNaN(g.TotalLag[i]) {
				g.TotalLag[i] = 0
			}
			g.TotalLag[i] += lag[i]
		}
		g.Partitions = append(g.Partitions, PartitionLag{Topic: gp.Topic, Partition: gp.Index, Lag: lag})
	}
	out := []GroupSeries{}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		out = append(out, *groups[name])
	}
	return out
}

// priceAt fills in the cost per hour at each point: requests at their
// rate for an hour, and the bucket bytes held for an hour.
func (s *StoreSeries) priceAt(p console.Prices, n int) {
	s.RequestCost, s.StorageCost, s.Cost = missingValues(n), missingValues(n), missingValues(n)
	if s.WriteBytes == nil {
		s.WriteBytes, s.ReadBytes = missingValues(n), missingValues(n)
	}
	if s.BucketBytes == nil {
		s.BucketBytes = missingValues(n)
	}
	class := func(ops []string, i int) (float64, bool) {
		total, known := 0.0, false
		for _, op := range ops {
			if r := s.Requests[op]; r != nil && !math.IsNaN(r[i]) {
				total, known = total+r[i], true
			}
		}
		return total, known
	}
	for i := range n {
		puts, okPut := class(putClass, i)
		gets, okGet := class(getClass, i)
		if okPut || okGet {
			s.RequestCost[i] = (puts*p.PutPer1000 + gets*p.GetPer1000) * 3600 / 1000
		}
		if b := s.BucketBytes[i]; !math.IsNaN(b) {
			s.StorageCost[i] = b / (1 << 30) * p.StorageGBMonth / hoursPerMonth
		}
		switch rc, sc := s.RequestCost[i], s.StorageCost[i]; {
		case !math.IsNaN(rc) && !math.IsNaN(sc):
			s.Cost[i] = rc + sc
		case !math.IsNaN(rc):
			s.Cost[i] = rc
		case !math.IsNaN(sc):
			s.Cost[i] = sc
		}
	}
}

// droppedNotes say what an agent's caps left out.
func droppedNotes(id int32, d Dropped) []string {
	var out []string
	if d.Topics > 0 {
		out = append(out, fmt.Sprintf("agent %d: %d topics past its series cap are summed as %q", id, d.Topics, OtherTopics))
	}
	if d.Partitions > 0 {
		out = append(out, fmt.Sprintf("agent %d: the high watermarks of %d partitions it leads are past its cap: their lag is not charted", id, d.Partitions))
	}
	if d.GroupPartitions > 0 {
		out = append(out, fmt.Sprintf("agent %d: the committed offsets of %d group partitions it coordinates are past its cap: their lag is not charted", id, d.GroupPartitions))
	}
	return out
}
