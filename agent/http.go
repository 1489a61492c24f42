package agent

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

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
