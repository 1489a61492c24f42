package agent

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-streaming/strata/agent/partition"
)

// newHTTPServer serves, behind the credentials httpauth.go asks for every
// method but GET and HEAD, for profiles, and for the read-only groups of
// --http-require-auth-for:
//
//	/metrics        Prometheus exposition of the agent's registry
//	/healthz        200 while the process serves HTTP at all (liveness)
//	/readyz         200 once the Kafka listener serves, 503 before and while stopping
//	/debug/pprof/   Go profiles, with --http-pprof
//	/               a plain-text status page
//	/console/       the web console, and its JSON under /v1/console (console.go)
func (a *Agent) newHTTPServer() *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{Registry: a.registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if !a.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if a.cfg.HTTPPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /v1/tiering", a.tieringStatus)
	mux.HandleFunc("/v1/drain", a.drainHandler)
	mux.HandleFunc("/{$}", a.statusPage)
	a.registerConsole(mux)
	return &http.Server{
		Handler:           a.newHTTPGuard().wrap(mux),
		ReadHeaderTimeout: 10 * time.Second,
		// Every request body here is a few bytes of JSON.
		ReadTimeout:    time.Minute,
		MaxHeaderBytes: 64 << 10,
		IdleTimeout:    a.cfg.HTTPIdleTimeout,
		ConnState:      a.httpConns.ConnState,
		// No WriteTimeout: /debug/pprof/profile and /trace write after
		// sampling for ?seconds=, 30 by default and often more, and a
		// forwarded drain or the console's fan-out waits on other agents.
	}
}

// statusPage prints the agent and its partitions, one line each. The page
// is served to anyone who reaches the HTTP port, so it shows neither the
// cluster id nor the store URL (which names the bucket and its endpoint);
// both are in the "agent started" log line (docs/operations.md).
func (a *Agent) statusPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "strata agent %d  kafka %s  log.flush=%s  ready=%v\n\n",
		a.id, a.advertisedAddr(), a.cfg.LogFlush, a.ready.Load())
	fmt.Fprintf(w, "%-40s %9s %6s %14s %14s %14s %14s\n", "partition", "leader", "epoch", "log-start", "high-water", "log-end", "bytes")
	for _, p := range a.localPartitions() {
		fmt.Fprintf(w, "%-40s %9d %6d %14d %14d %14d %14d\n", partition.DirName(p.Topic(), p.Index()),
			p.Leader(), p.LeaderEpoch(), p.LogStartOffset(), p.HighWatermark(), p.LogEndOffset(), p.Size())
	}
}

// partitionCollector exports per-partition gauges, read at scrape time so
// the append path pays nothing for them.
type partitionCollector struct {
	a                                     *Agent
	logEnd, highWater, logStart, sizeDesc *prometheus.Desc
	underReplicated, appends, fsyncs      *prometheus.Desc
}

func newPartitionCollector(a *Agent) *partitionCollector {
	labels := []string{"topic", "partition"}
	return &partitionCollector{
		a:               a,
		logEnd:          prometheus.NewDesc("strata_partition_log_end_offset", "Next offset to be written.", labels, nil),
		highWater:       prometheus.NewDesc("strata_partition_high_watermark", "Offset below which consumers may read.", labels, nil),
		logStart:        prometheus.NewDesc("strata_partition_log_start_offset", "First offset still kept.", labels, nil),
		sizeDesc:        prometheus.NewDesc("strata_partition_log_size_bytes", "Bytes of the partition's local segment files.", labels, nil),
		underReplicated: prometheus.NewDesc("strata_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set.", nil, nil),
		appends:         prometheus.NewDesc("strata_partition_appends_total", "Batches appended since the agent started.", labels, nil),
		fsyncs:          prometheus.NewDesc("strata_partition_fsyncs_total", "Fsyncs of segment files since the agent started; below appends_total means group commit.", labels, nil),
	}
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.logEnd, c.highWater, c.logStart, c.sizeDesc, c.underReplicated, c.appends, c.fsyncs} {
		ch <- d
	}
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	under := 0
	for _, p := range c.a.localPartitions() {
		l := []string{p.Topic(), strconv.Itoa(int(p.Index()))}
		gauge := func(d *prometheus.Desc, v int64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), l...)
		}
		gauge(c.logEnd, p.LogEndOffset())
		gauge(c.highWater, p.HighWatermark())
		gauge(c.logStart, p.LogStartOffset())
		gauge(c.sizeDesc, p.Size())
		st := p.LocalLog().Stats()
		ch <- prometheus.MustNewConstMetric(c.appends, prometheus.CounterValue, float64(st.Appends), l...)
		ch <- prometheus.MustNewConstMetric(c.fsyncs, prometheus.CounterValue, float64(st.Fsyncs), l...)
		if p.Leader() == c.a.id && len(p.ISR()) < len(p.Replicas()) {
			under++
		}
	}
	ch <- prometheus.MustNewConstMetric(c.underReplicated, prometheus.GaugeValue, float64(under))
}
