package loadgen

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Latency is a latency distribution in milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

func latencyOf(h *Histogram) Latency {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Latency{Count: h.Count(), P50: ms(h.Quantile(0.5)), P99: ms(h.Quantile(0.99)),
		P999: ms(h.Quantile(0.999)), Max: ms(h.Max())}
}

// Result is one run, printed as one JSON line. Records, Bytes and Seconds
// are the measured phase: acknowledged records for produce and e2e runs,
// records read for catch-up runs. MB is 10^6 bytes of record values.
//
// The counts add up: Sent = Acked + Errors once every promise has
// returned; in e2e and catch-up runs Consumed counts distinct records read
// (a record delivered twice counts once).
type Result struct {
	System        string   `json:"system"`
	Scenario      string   `json:"scenario"`
	Mode          Mode     `json:"mode"`
	Settings      Settings `json:"settings"`
	Records       int64    `json:"records"`
	Bytes         int64    `json:"bytes"`
	Seconds       float64  `json:"seconds"`
	RecordsPerSec float64  `json:"records_per_s"`
	MBPerSec      float64  `json:"mb_per_s"`
	Sent          int64    `json:"sent"`
	Acked         int64    `json:"acked"`
	Consumed      int64    `json:"consumed"`
	Errors        int64    `json:"errors"`
	FirstError    string   `json:"first_error,omitempty"`
	Produce       Latency  `json:"produce_latency"`
	EndToEnd      *Latency `json:"e2e_latency,omitempty"`
	// StorePuts counts the object-store PUTs a Strata target made from
	// the start of the produce phase to the end of the run (after
	// Config.UploadSettle); absent for other systems.
	StorePuts *int64 `json:"store_puts,omitempty"`
	// StoreRead, in catchup-store runs, is what the agents' remote-read
	// path did during the timed read.
	StoreRead *StoreRead `json:"store_read,omitempty"`
	// Cleaner, in runs of a compacted topic on a Strata target, is what
	// its agents' log cleaners did during the run (zero with the cleaner
	// off).
	Cleaner *CleanerWork `json:"cleaner,omitempty"`
	// StoreWrites, in runs on the strata-diskless target and --diskless
	// runs on Strata targets, is what the agents wrote to the store
	// during the timed produce phase.
	StoreWrites *StoreWrites `json:"store_writes,omitempty"`
	// IdleRequests counts the requests the idle connections
	// (Settings.Connections) had answered by the end of the run, past
	// those each made as it opened.
	IdleRequests int64   `json:"idle_requests,omitempty"`
	Machine      Machine `json:"machine"`
	Start        string  `json:"start"`
}

// StoreRead is a Strata target's remote reads during a timed read, from
// its agents' counters: the store requests and bytes counted for the
// benchmark topic, and the chunk cache's lookups (the agent counts those
// for every topic, but only the benchmark's is read then).
type StoreRead struct {
	// Gets are GET-class store requests (ranged GETs and HEADs).
	Gets int64 `json:"gets"`
	// Bytes are object bytes read from the store.
	Bytes       int64 `json:"bytes"`
	CacheHits   int64 `json:"cache_hits"`
	CacheMisses int64 `json:"cache_misses"`
}

// Settings are the workload settings echoed in the output. Keys is the
// key space (Config.Keys), 0 or absent without keys; results from before
// it have a "keys" boolean instead, always false, which is ignored.
type Settings struct {
	Rate        int  `json:"rate"`
	RecordBytes int  `json:"record_bytes"`
	Keys        int  `json:"key_space,omitempty"`
	Compact     bool `json:"compact,omitempty"`
	// Diskless is Config.Diskless: every system's topic diskless. The
	// strata-diskless target's systems choose their own mode, which
	// their names say, and leave it false.
	Diskless    bool    `json:"diskless,omitempty"`
	Partitions  int     `json:"partitions"`
	Replication int     `json:"replication_factor"`
	Producers   int     `json:"producers"`
	Acks        string  `json:"acks"`
	LingerMs    float64 `json:"linger_ms"`
	Compression string  `json:"compression"`
	Duration    string  `json:"duration,omitempty"`
	Records     int64   `json:"records,omitempty"`
	// Connections are the idle connections held besides the producers
	// and the consumer, each sending a request every ConnectionInterval.
	Connections        int    `json:"connections,omitempty"`
	ConnectionInterval string `json:"connection_interval,omitempty"`
	// TxnRecords are the records of each transaction; 0 or absent: none.
	TxnRecords int `json:"txn_records,omitempty"`
}

func settingsOf(c Config) Settings {
	s := Settings{Rate: c.Rate, RecordBytes: c.RecordBytes, Keys: c.Keys, Compact: c.Compact, Diskless: c.Diskless, Partitions: c.Partitions,
		Replication: c.ReplicationFactor, Producers: c.Producers, Acks: c.Acks, LingerMs: float64(c.Linger.Microseconds()) / 1000,
		Compression: c.Compression, Records: c.Records, TxnRecords: c.TxnRecords}
	if c.Records == 0 {
		s.Duration = c.Duration.String()
	}
	if c.Connections > 0 {
		s.Connections, s.ConnectionInterval = c.Connections, c.ConnectionInterval.String()
	}
	return s
}

// Machine is what the run shared the machine with.
type Machine struct {
	CPUs      int     `json:"cpus"`
	Load1     float64 `json:"load1"`
	GoVersion string  `json:"go"`
}

// machineNow reads the one-minute load average (0 where /proc/loadavg is
// missing).
func machineNow() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.Load1, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return m
}

// Summary is the one-line human form of r.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %s: %.0f records/s, %.1f MB/s", r.System, r.Scenario, r.RecordsPerSec, r.MBPerSec)
	if r.Produce.Count > 0 {
		fmt.Fprintf(&b, ", produce p50 %.2f p99 %.2f p99.9 %.2f ms", r.Produce.P50, r.Produce.P99, r.Produce.P999)
	}
	if r.EndToEnd != nil {
		fmt.Fprintf(&b, ", e2e p50 %.2f p99 %.2f p99.9 %.2f ms", r.EndToEnd.P50, r.EndToEnd.P99, r.EndToEnd.P999)
	}
	if r.StorePuts != nil {
		fmt.Fprintf(&b, ", %d store PUTs", *r.StorePuts)
	}
	if sr := r.StoreRead; sr != nil {
		fmt.Fprintf(&b, ", read from the store: %d GETs, %.1f MB, cache %d hits %d misses", sr.Gets, float64(sr.Bytes)/1e6, sr.CacheHits, sr.CacheMisses)
	}
	if c := r.Cleaner; c != nil {
		fmt.Fprintf(&b, ", cleaner: %d passes read %.1f MB in %.2fs (%.1f MB/s), wrote %.1f MB", c.Passes,
			float64(c.ReadBytes)/1e6, c.Seconds, c.ReadMBPerSec, float64(c.WrittenBytes)/1e6)
	}
	if w := r.StoreWrites; w != nil {
		fmt.Fprintf(&b, ", timed phase: %d store PUTs (%.1f/s, %.0f per GiB), %d diskless objects of %.1f MB, commit p50 %.1f p99 %.1f ms",
			w.Puts, w.PutsPerSec, w.PutsPerGiB, w.Objects, float64(w.ObjectBytes)/1e6, w.CommitP50Ms, w.CommitP99Ms)
	}
	if r.Settings.Connections > 0 {
		fmt.Fprintf(&b, ", %d idle connections answered %d requests", r.Settings.Connections, r.IdleRequests)
	}
	fmt.Fprintf(&b, ", %d errors, load %.2f", r.Errors, r.Machine.Load1)
	return b.String()
}

// Median is rs[0] with every measured number replaced by its median over
// rs, each taken on its own: the median p99 is the middle run's p99,
// which need not be the run with the median records/s. With an even count
// it is the lower middle value. The counts are medians too, so they need
// not add up; Errors is the total over rs, so that no failed run hides.
func Median(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	m := rs[0]
	f := func(get func(Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = get(r)
		}
		slices.Sort(v)
		return v[(len(v)-1)/2]
	}
	i := func(get func(Result) int64) int64 {
		return int64(f(func(r Result) float64 { return float64(get(r)) }))
	}
	lat := func(get func(Result) *Latency) *Latency {
		if get(rs[0]) == nil {
			return nil
		}
		l := func(field func(Latency) float64) float64 {
			return f(func(r Result) float64 {
				if p := get(r); p != nil {
					return field(*p)
				}
				return 0
			})
		}
		return &Latency{
			Count: uint64(l(func(x Latency) float64 { return float64(x.Count) })),
			P50:   l(func(x Latency) float64 { return x.P50 }),
			P99:   l(func(x Latency) float64 { return x.P99 }),
			P999:  l(func(x Latency) float64 { return x.P999 }),
			Max:   l(func(x Latency) float64 { return x.Max }),
		}
	}
	m.Records = i(func(r Result) int64 { return r.Records })
	m.Bytes = i(func(r Result) int64 { return r.Bytes })
	m.Seconds = f(func(r Result) float64 { return r.Seconds })
	m.RecordsPerSec = f(func(r Result) float64 { return r.RecordsPerSec })
	m.MBPerSec = f(func(r Result) float64 { return r.MBPerSec })
	m.Sent = i(func(r Result) int64 { return r.Sent })
	m.Acked = i(func(r Result) int64 { return r.Acked })
	m.Consumed = i(func(r Result) int64 { return r.Consumed })
	m.Errors, m.FirstError = 0, ""
	for _, r := range rs {
		m.Errors += r.Errors
		if m.FirstError == "" {
			m.FirstError = r.FirstError
		}
	}
	m.Produce = *lat(func(r Result) *Latency { return &r.Produce })
	m.EndToEnd = lat(func(r Result) *Latency { return r.EndToEnd })
	m.Machine.Load1 = f(func(r Result) float64 { return r.Machine.Load1 })
	if rs[0].StorePuts != nil {
		puts := i(func(r Result) int64 {
			if r.StorePuts == nil {
				return 0
			}
			return *r.StorePuts
		})
		m.StorePuts = &puts
	}
	m.IdleRequests = i(func(r Result) int64 { return r.IdleRequests })
	if rs[0].StoreRead != nil {
		read := func(get func(StoreRead) int64) int64 {
			return i(func(r Result) int64 {
				if r.StoreRead == nil {
					return 0
				}
				return get(*r.StoreRead)
			})
		}
		m.StoreRead = &StoreRead{
			Gets:        read(func(s StoreRead) int64 { return s.Gets }),
			Bytes:       read(func(s StoreRead) int64 { return s.Bytes }),
			CacheHits:   read(func(s StoreRead) int64 { return s.CacheHits }),
			CacheMisses: read(func(s StoreRead) int64 { return s.CacheMisses }),
		}
	}
	if rs[0].Cleaner != nil {
		work := func(get func(CleanerWork) float64) float64 {
			return f(func(r Result) float64 {
				if r.Cleaner == nil {
					return 0
				}
				return get(*r.Cleaner)
			})
		}
		m.Cleaner = &CleanerWork{
			Passes:       int64(work(func(w CleanerWork) float64 { return float64(w.Passes) })),
			ReadBytes:    int64(work(func(w CleanerWork) float64 { return float64(w.ReadBytes) })),
			WrittenBytes: int64(work(func(w CleanerWork) float64 { return float64(w.WrittenBytes) })),
			Seconds:      work(func(w CleanerWork) float64 { return w.Seconds }),
			ReadMBPerSec: work(func(w CleanerWork) float64 { return w.ReadMBPerSec }),
		}
	}
	if rs[0].StoreWrites != nil {
		writes := func(get func(StoreWrites) float64) float64 {
			return f(func(r Result) float64 {
				if r.StoreWrites == nil {
					return 0
				}
				return get(*r.StoreWrites)
			})
		}
		m.StoreWrites = &StoreWrites{
			Seconds:     writes(func(w StoreWrites) float64 { return w.Seconds }),
			Puts:        int64(writes(func(w StoreWrites) float64 { return float64(w.Puts) })),
			Objects:     int64(writes(func(w StoreWrites) float64 { return float64(w.Objects) })),
			ObjectBytes: int64(writes(func(w StoreWrites) float64 { return float64(w.ObjectBytes) })),
			Bytes:       int64(writes(func(w StoreWrites) float64 { return float64(w.Bytes) })),
			PutsPerSec:  writes(func(w StoreWrites) float64 { return w.PutsPerSec }),
			PutsPerGiB:  writes(func(w StoreWrites) float64 { return w.PutsPerGiB }),
			CommitP50Ms: writes(func(w StoreWrites) float64 { return w.CommitP50Ms }),
			CommitP99Ms: writes(func(w StoreWrites) float64 { return w.CommitP99Ms }),
		}
	}
	return m
}
