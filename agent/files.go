package agent

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/internal/fdlimit"
)

// newFilePool makes the pool through which every partition log opens its
// segment files, bounded by --log-max-open-files or, by default, by what
// the descriptor limit leaves after --max-connections; and warns when the
// limit cannot hold both bounds at once: then connections or store writes
// may fail with "too many open files" under load.
func (a *Agent) newFilePool() *log.FilePool {
	limit, known := fdlimit.Current()
	n := a.cfg.LogMaxOpenFiles
	if n == 0 && known {
		n = fdlimit.LogFiles(limit, a.cfg.Kafka.MaxConnections)
	}
	if need := fdlimit.Needed(a.cfg.Kafka.MaxConnections, n); known && need > limit {
		a.logger.Warn("--max-connections and --log-max-open-files may need more file descriptors than the limit allows; raise the limit (ulimit -n, LimitNOFILE) or lower them",
			"max_connections", a.cfg.Kafka.MaxConnections, "log_max_open_files", n, "reserved", fdlimit.Reserve, "needed", need, "nofile_limit", limit)
	}
	p := log.NewFilePool(n, a.logger.With("component", "log"))
	a.logger.Info("segment file pool", "log_max_open_files", n, "nofile_limit", limit)
	a.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_log_open_files",
			Help: "Partition segment files open now (--log-max-open-files bounds it, except while more are in use at once)."},
			func() float64 { return float64(p.Stats().Open) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_log_file_evictions_total",
			Help: "Idle segment files closed to stay within --log-max-open-files or to make room after EMFILE."},
			func() float64 { return float64(p.Stats().Evictions) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "strata_log_file_open_retries_total",
			Help: "Segment file opens retried because the process was out of file descriptors (EMFILE, ENFILE)."},
			func() float64 { return float64(p.Stats().Retries) }))
	return p
}
