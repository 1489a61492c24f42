// Package cleaner is the agent's log cleaner (docs/design.md §7): one
// goroutine per agent, as Kafka's with
// log.cleaner.threads=1. Each replica cleans its own copy of a compacted
// partition (leader and followers alike, as in Kafka), so nothing here
// depends on leadership. Each round it cleans the dirtiest eligible log
// (agent/log.CleanState: dirty ratio at or above min.cleanable.dirty.ratio,
// or a record past max.compaction.lag.ms), then looks again; when no log is
// eligible it waits --log-cleaner-backoff. One OffsetMap of
// --log-cleaner-dedupe-buffer-size bytes, allocated at the first clean, and
// one throttle of --log-cleaner-io-max-bytes-per-second serve every log,
// and the bucket parts of compacted tiered partitions (remote.go).
//
// Metrics:
//
//	strata_log_cleaner_runs_total                  cleaning passes finished
//	strata_log_cleaner_errors_total                passes that failed
//	strata_log_cleaner_read_bytes_total            segment bytes read by passes
//	strata_log_cleaner_written_bytes_total         cleaned segment bytes written
//	strata_log_cleaner_last_run_duration_seconds   length of the last pass
//	strata_log_cleaner_seconds_total               time spent in passes, so read bytes over it is the cleaner's speed
//	strata_log_cleaner_max_dirty_ratio             highest dirty ratio among compacted logs at the last look
package cleaner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
)

// Host is what the cleaner needs of the agent. Both methods are called
// from the cleaner's goroutine only, and must not block on the store.
type Host interface {
	// Partitions are the local replicas. Any may close at any time: a
	// pass on a closed log ends with log.ErrClosed.
	Partitions() []*partition.Partition
	// Resolved is topic's effective configs; false once it is deleted.
	Resolved(topic string) (metadata.Resolved, bool)
}

// Cleaner is one agent's log cleaner. Run it on one goroutine.
type Cleaner struct {
	cfg     Config
	dataDir string
	host    Host
	metrics *metrics
	logger  *slog.Logger
}

// New is the cleaner of host's logs; its temporary files go under
// dataDir. Its metrics are registered with reg.
func New(cfg Config, dataDir string, host Host, reg prometheus.Registerer, logger *slog.Logger) *Cleaner {
	return &Cleaner{cfg: cfg, dataDir: dataDir, host: host, metrics: newMetrics(reg), logger: logger}
}

// Config holds the broker-wide --log-cleaner-* settings.
type Config struct {
	// Enable (--log-cleaner-enable, log.cleaner.enable): without it,
	// compacted topics are never cleaned and grow as if retained forever.
	Enable bool
	// IOMaxBytesPerSecond (--log-cleaner-io-max-bytes-per-second,
	// log.cleaner.io.max.bytes.per.second) bounds the cleaner's reads plus
	// writes; 0 is unlimited, Kafka's default.
	IOMaxBytesPerSecond int64
	// DedupeBufferSize (--log-cleaner-dedupe-buffer-size,
	// log.cleaner.dedupe.buffer.size) is the offset map's memory: 24 bytes
	// a key, so 128 MiB holds about 5 million keys per pass.
	DedupeBufferSize int64
	// Backoff (--log-cleaner-backoff, log.cleaner.backoff.ms) is the wait
	// when no log needs cleaning.
	Backoff time.Duration
}

// DefaultConfig is Kafka's defaults.
func DefaultConfig() Config {
	return Config{Enable: true, DedupeBufferSize: 128 << 20, Backoff: 15 * time.Second}
}

// Validate names the first bad flag.
func (c Config) Validate() error {
	switch {
	case c.IOMaxBytesPerSecond < 0:
		return fmt.Errorf("--log-cleaner-io-max-bytes-per-second %d: must not be negative", c.IOMaxBytesPerSecond)
	case c.DedupeBufferSize < log.MinOffsetMapBytes || c.DedupeBufferSize > 1<<40:
		return fmt.Errorf("--log-cleaner-dedupe-buffer-size %d: must be in [%d, %d]", c.DedupeBufferSize, log.MinOffsetMapBytes, int64(1)<<40)
	case c.Backoff <= 0:
		return fmt.Errorf("--log-cleaner-backoff %v: must be positive", c.Backoff)
	}
	return nil
}

type metrics struct {
	runs, errors, read, written, seconds prometheus.Counter
	lastRun, maxDirty                    prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs:    prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_log_cleaner_runs_total", Help: "Cleaning passes of compacted partition logs that finished."}),
		errors:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_log_cleaner_errors_total", Help: "Cleaning passes that failed."}),
		read:    prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_log_cleaner_read_bytes_total", Help: "Segment bytes the log cleaner read."}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_log_cleaner_written_bytes_total", Help: "Cleaned segment bytes the log cleaner wrote."}),
		seconds: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_log_cleaner_seconds_total",
			Help: "Seconds spent in cleaning passes, failed ones included: the time the read and written bytes took."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_log_cleaner_last_run_duration_seconds", Help: "How long the last cleaning pass took."}),
		maxDirty: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_log_cleaner_max_dirty_ratio",
			Help: "Highest share of uncleaned bytes among this agent's compacted partition logs, at the cleaner's last look."}),
	}
	reg.MustRegister(m.runs, m.errors, m.read, m.written, m.seconds, m.lastRun, m.maxDirty)
	return m
}

// Run cleans until ctx ends; without Config.Enable it returns at once.
func (c *Cleaner) Run(ctx context.Context) {
	if !c.cfg.Enable {
		return
	}
	c.removeRemoteCompactionLeftovers()
	var m *log.OffsetMap
	th := log.NewThrottle(float64(c.cfg.IOMaxBytesPerSecond))
	t := time.NewTimer(c.cfg.Backoff)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Clean while some log is eligible, at most once per log per
		// round so that one busy log cannot starve the others.
		done := map[*partition.Partition]bool{}
		cleaned := false
		for ctx.Err() == nil {
			p := c.dirtiestLog(done)
			if p == nil {
				break
			}
			done[p] = true
			if m == nil {
				m = log.NewOffsetMap(int(c.cfg.DedupeBufferSize))
			}
			if c.cleanLog(ctx, p, m, th) {
				cleaned = true
			}
		}
		// The bucket parts of compacted tiered partitions this agent leads
		// (remote.go).
		if c.compactRemote(ctx, &m, th) {
			cleaned = true
		}
		// As Kafka's cleaner thread, back off only after a round that
		// cleaned nothing: a log still dirty after its pass (its map
		// filled, or it kept up with a fast producer) is looked at again
		// at once rather than a backoff later.
		if cleaned {
			t.Reset(0)
		} else {
			t.Reset(c.cfg.Backoff)
		}
	}
}

// dirtiestLog picks, among the logs not done this round, the eligible
// compacted log with a record past max.compaction.lag.ms first, then the
// one with the highest dirty ratio; nil if none.
func (c *Cleaner) dirtiestLog(done map[*partition.Partition]bool) *partition.Partition {
	var best *partition.Partition
	var bestState log.CleanState
	maxRatio := 0.0
	for _, p := range c.host.Partitions() {
		st := p.LocalLog().CleanState(p.HighWatermark())
		if !st.Compact {
			continue
		}
		maxRatio = max(maxRatio, st.DirtyRatio)
		if !st.Eligible || done[p] {
			continue
		}
		if best == nil || st.Overdue && !bestState.Overdue || st.Overdue == bestState.Overdue && st.DirtyRatio > bestState.DirtyRatio {
			best, bestState = p, st
		}
	}
	c.metrics.maxDirty.Set(maxRatio)
	return best
}

// cleanLog runs one pass over p's log and reports whether it cleaned
// anything.
func (c *Cleaner) cleanLog(ctx context.Context, p *partition.Partition, m *log.OffsetMap, th *log.Throttle) bool {
	start := time.Now()
	res, err := p.LocalLog().Clean(ctx, m, th, p.HighWatermark())
	took := time.Since(start)
	c.metrics.read.Add(float64(res.BytesRead))
	c.metrics.written.Add(float64(res.BytesWritten))
	c.metrics.seconds.Add(took.Seconds())
	switch {
	case errors.Is(err, log.ErrClosed) || errors.Is(err, context.Canceled): // deleted or stopping
	case err != nil:
		c.metrics.errors.Inc()
		c.logger.Error("log cleaner", "topic", p.Topic(), "partition", p.Index(), "err", err)
	default:
		c.metrics.runs.Inc()
		c.metrics.lastRun.Set(took.Seconds())
		return res.End > res.FirstDirty
	}
	return false
}
