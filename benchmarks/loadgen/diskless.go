package loadgen

// Diskless topics (issue 34's benchmark rows): a topic created with
// diskless.enable=true keeps no log on the agent; a produced batch waits
// in the agent's write buffer until the buffer is cut (every
// --diskless-commit-interval, 250 ms, or at --diskless-commit-bytes,
// 8 MiB), is uploaded in one commit object with one PUT, committed by the
// partition's batch coordinator, and only then answered.
//
// The strata-diskless target is one agent whose store is a MinIO process
// on loopback, run as two systems: strata-classic creates each run's
// topic classic (replication factor 1, acknowledged after the local
// fsync) and strata-diskless creates it diskless. One agent rather than
// two, as strata-security's listeners: the same process, disk, store and
// settings, so that the topic's mode is the only difference; runs
// alternate between the systems as between any two.
//
// A run of either system, or any --diskless run on a Strata target,
// records what the agent wrote to the store during the timed produce
// phase (StoreWrites): the PUTs (strata_store_requests_total, op="put"),
// the commit objects (strata_diskless_objects_uploaded_total and _bytes),
// and the quantiles of strata_diskless_commit_seconds (an object's cut to
// its batches' answers), each read from /metrics just before the clock
// starts (after the warm-up) and once the last record is acknowledged.

import (
	"context"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/agent/console/history"
)

// System names of the strata-diskless target's two systems.
const (
	SystemStrataClassic  = "strata-classic"
	SystemStrataDiskless = "strata-diskless"
)

// disklessTopicConfigs are a diskless benchmark topic's configs; the
// rest are the agent's defaults.
func disklessTopicConfigs() map[string]*string {
	v := "true"
	return map[string]*string{"diskless.enable": &v}
}

// topicModer is a target that chooses its topics' mode, whatever
// Config.Diskless says: the strata-diskless target's systems.
type topicModer interface {
	disklessTopics() bool
}

// disklessSystem is one of the strata-diskless target's systems: the
// agent on MinIO, and the mode of the topics its runs create. Close
// stops the agent and MinIO (either system's Close, and twice).
type disklessSystem struct {
	*StrataOnMinIO
	system   string
	diskless bool
}

func (d disklessSystem) System() string       { return d.system }
func (d disklessSystem) disklessTopics() bool { return d.diskless }

// StartStrataDiskless starts MinIO and one agent on it as
// StartStrataOnMinIO does, with opts.Args, and returns it as the systems
// strata-classic and strata-diskless, in that order.
func StartStrataDiskless(ctx context.Context, opts StrataOptions) ([]Target, error) {
	s, err := StartStrataOnMinIO(ctx, opts)
	if err != nil {
		return nil, err
	}
	return []Target{
		disklessSystem{StrataOnMinIO: s, system: SystemStrataClassic},
		disklessSystem{StrataOnMinIO: s, system: SystemStrataDiskless, diskless: true},
	}, nil
}

// StoreWrites is what a Strata target's agents wrote to the store during
// a run's timed produce phase: from just before the clock started, after
// the warm-up, to the last acknowledgement (or the drain timeout).
// PutsPerGiB divides the PUTs by the acknowledged record values
// (Result.Bytes) in GiB, as the store-cost target does; an object holds
// more (batch and object headers), ObjectBytes says how much.
type StoreWrites struct {
	// Seconds is the time between the two readings of the counters.
	Seconds float64 `json:"seconds"`
	// Puts are every store PUT (strata_store_requests_total, op="put",
	// every outcome): commit objects, their retries, and whatever else
	// the agent uploaded meanwhile.
	Puts int64 `json:"puts"`
	// Objects and ObjectBytes are the diskless commit objects stored.
	Objects     int64 `json:"diskless_objects"`
	ObjectBytes int64 `json:"diskless_object_bytes"`
	// Bytes are the record values acknowledged in the phase.
	Bytes      int64   `json:"bytes"`
	PutsPerSec float64 `json:"puts_per_s"`
	PutsPerGiB float64 `json:"puts_per_gib"`
	// CommitP50Ms and CommitP99Ms are quantiles of the objects' cut to
	// their answers (strata_diskless_commit_seconds, over the phase),
	// interpolated in its buckets (5 ms doubling) as Prometheus's
	// histogram_quantile does; 0 when no object was committed.
	CommitP50Ms float64 `json:"commit_p50_ms,omitempty"`
	CommitP99Ms float64 `json:"commit_p99_ms,omitempty"`
}

// storeWriteCounters are one reading of the counters StoreWrites is the
// difference of.
type storeWriteCounters struct {
	at          time.Time
	puts        float64
	objects     float64
	objectBytes float64
	commit      history.Histogram
}

// readStoreWrites reads, summed over the agents, the counters of
// StoreWrites. An agent that has not yet written a diskless object still
// exposes the histogram, with zero counts.
func readStoreWrites(ctx context.Context, addrs []string) (storeWriteCounters, error) {
	m, err := scrape(ctx, addrs)
	if err != nil {
		return storeWriteCounters{}, err
	}
	c := storeWriteCounters{at: time.Now(),
		puts:        m.sum("strata_store_requests_total", "op", "put"),
		objects:     m.sum("strata_diskless_objects_uploaded_total"),
		objectBytes: m.sum("strata_diskless_object_bytes_total"),
		commit:      m.histogram("strata_diskless_commit_seconds"),
	}
	return c, nil
}

// histogram sums, over the agents, the buckets and count of the named
// histogram (without its _bucket suffix), bounds in ascending order; the
// +Inf bucket is left out, its count is Count.
func (m agentMetrics) histogram(name string) history.Histogram {
	var h history.Histogram
	for _, fams := range m {
		var bounds, cumulative []float64
		for _, s := range fams.Samples(name + "_bucket") {
			le, err := strconv.ParseFloat(s.Labels["le"], 64)
			if err != nil || math.IsInf(le, 1) {
				continue
			}
			bounds, cumulative = append(bounds, le), append(cumulative, s.Value)
		}
		if len(bounds) == 0 {
			continue // an agent without the histogram
		}
		if len(h.Bounds) == 0 {
			h.Bounds, h.Cumulative = bounds, make([]float64, len(bounds))
		}
		if !slices.Equal(bounds, h.Bounds) {
			continue // one binary's agents all have the same buckets
		}
		for i := range bounds {
			h.Cumulative[i] += cumulative[i]
		}
		v, _ := fams.Value(name + "_count")
		h.Count += v
	}
	return h
}

// since is what the counters moved from before to c, over bytes of
// acknowledged record values.
func (c storeWriteCounters) since(before storeWriteCounters, bytes int64) StoreWrites {
	w := StoreWrites{Seconds: c.at.Sub(before.at).Seconds(), Puts: int64(c.puts - before.puts),
		Objects: int64(c.objects - before.objects), ObjectBytes: int64(c.objectBytes - before.objectBytes), Bytes: bytes}
	if w.Seconds > 0 {
		w.PutsPerSec = float64(w.Puts) / w.Seconds
	}
	if bytes > 0 {
		w.PutsPerGiB = float64(w.Puts) / (float64(bytes) / (1 << 30))
	}
	ms := func(q float64) float64 {
		v := history.IntervalQuantile(q, c.commit, before.commit)
		if math.IsNaN(v) {
			return 0
		}
		return v * 1000
	}
	w.CommitP50Ms, w.CommitP99Ms = ms(0.5), ms(0.99)
	return w
}
