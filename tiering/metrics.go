package tiering

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the counters of tiering. The per-partition gauges (upload
// lag, remote bytes) come from Tierer.Collector.
type Metrics struct {
	uploadedBytes    *prometheus.CounterVec
	uploadedSegments *prometheus.CounterVec
	uploadFailures   *prometheus.CounterVec
	uploadSeconds    prometheus.Histogram
	deletedSegments  prometheus.Counter
	cacheRequests    *prometheus.CounterVec
	remoteReadBytes  prometheus.Counter
	compaction       compactionMetrics
	costs            *costMetrics // per-topic store requests and bytes (cost.go)
}

// NewMetrics makes the counters and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		uploadedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_tiering_uploaded_bytes_total",
			Help: "Segment bytes uploaded to the object store, by topic."}, []string{"topic"}),
		uploadedSegments: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_tiering_uploaded_segments_total",
			Help: "Segments uploaded to the object store, by topic."}, []string{"topic"}),
		uploadFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_tiering_upload_failures_total",
			Help: "Upload rounds of a partition that failed (they are retried with backoff), by topic."}, []string{"topic"}),
		uploadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_tiering_upload_duration_seconds",
			Help: "Time to upload one segment and add it to the manifest.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		deletedSegments: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_tiering_deleted_segments_total",
			Help: "Uploaded segments removed by retention, DeleteRecords or the orphan janitor."}),
		cacheRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_tiering_cache_requests_total",
			Help: "Remote-read cache lookups, by result (hit or miss)."}, []string{"result"}),
		remoteReadBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_tiering_remote_read_bytes_total",
			Help: "Bytes fetched from the object store for remote reads."}),
		costs:      newCostMetrics(),
		compaction: newCompactionMetrics(),
	}
	if reg != nil {
		reg.MustRegister(m.uploadedBytes, m.uploadedSegments, m.uploadFailures, m.uploadSeconds, m.deletedSegments, m.cacheRequests, m.remoteReadBytes, m.costs)
		m.compaction.register(reg)
	}
	return m
}

func (m *Metrics) uploaded(topic string, bytes int64, took time.Duration) {
	m.uploadedBytes.WithLabelValues(topic).Add(float64(bytes))
	m.uploadedSegments.WithLabelValues(topic).Inc()
	m.uploadSeconds.Observe(took.Seconds())
}

func (m *Metrics) uploadFailed(topic string) { m.uploadFailures.WithLabelValues(topic).Inc() }
func (m *Metrics) deleted(n int)             { m.deletedSegments.Add(float64(n)) }
func (m *Metrics) cache(hit bool) {
	if hit {
		m.cacheRequests.WithLabelValues("hit").Inc()
	} else {
		m.cacheRequests.WithLabelValues("miss").Inc()
	}
}

var (
	lagBytesDesc = prometheus.NewDesc("strata_tiering_upload_lag_bytes",
		"Bytes of sealed segments not yet in the object store.", []string{"topic", "partition"}, nil)
	lagSegmentsDesc = prometheus.NewDesc("strata_tiering_upload_lag_segments",
		"Sealed segments not yet in the object store.", []string{"topic", "partition"}, nil)
	lagSecondsDesc = prometheus.NewDesc("strata_tiering_upload_lag_seconds",
		"How long the oldest sealed segment not yet in the object store has waited.", []string{"topic", "partition"}, nil)
	remoteBytesDesc = prometheus.NewDesc("strata_tiering_remote_bytes",
		"Bytes of a partition held in the object store.", []string{"topic", "partition"}, nil)
)

// Collector exports the per-partition gauges of t.
func (t *Tierer) Collector() prometheus.Collector { return tierCollector{t} }

type tierCollector struct{ t *Tierer }

func (c tierCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagBytesDesc
	ch <- lagSegmentsDesc
	ch <- lagSecondsDesc
	ch <- remoteBytesDesc
}

func (c tierCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.t.Statuses() {
		p := strconv.Itoa(int(s.Partition))
		ch <- prometheus.MustNewConstMetric(lagBytesDesc, prometheus.GaugeValue, float64(s.LagBytes), s.Topic, p)
		ch <- prometheus.MustNewConstMetric(lagSegmentsDesc, prometheus.GaugeValue, float64(s.LagSegments), s.Topic, p)
		ch <- prometheus.MustNewConstMetric(lagSecondsDesc, prometheus.GaugeValue, s.LagSeconds, s.Topic, p)
		ch <- prometheus.MustNewConstMetric(remoteBytesDesc, prometheus.GaugeValue, float64(s.RemoteBytes), s.Topic, p)
	}
}

// compactionMetrics count remote compaction passes (compact.go). Their
// GETs and PUTs are also in the per-topic store counters (cost.go), as
// they go through the topic's counting bucket.
type compactionMetrics struct {
	runs, read, written, before, after *prometheus.CounterVec
}

func newCompactionMetrics() compactionMetrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"topic"})
	}
	return compactionMetrics{
		runs:    counter("strata_tiering_compaction_runs_total", "Remote compaction passes swapped into a manifest, by topic."),
		read:    counter("strata_tiering_compaction_read_bytes_total", "Segment bytes remote compaction read from the object store, by topic."),
		written: counter("strata_tiering_compaction_written_bytes_total", "Compacted segment bytes remote compaction wrote to the object store, by topic."),
		before:  counter("strata_tiering_compaction_objects_before_total", "Uploaded segments that remote compaction passes replaced, by topic."),
		after:   counter("strata_tiering_compaction_objects_after_total", "Compacted segments remote compaction passes wrote in their place, by topic."),
	}
}

func (c compactionMetrics) register(reg prometheus.Registerer) {
	reg.MustRegister(c.runs, c.read, c.written, c.before, c.after)
}

func (m *Metrics) compacted(topic string, r CompactResult) {
	m.compaction.runs.WithLabelValues(topic).Inc()
	m.compaction.read.WithLabelValues(topic).Add(float64(r.BytesRead))
	m.compaction.written.WithLabelValues(topic).Add(float64(r.BytesWritten))
	m.compaction.before.WithLabelValues(topic).Add(float64(r.ObjectsBefore))
	m.compaction.after.WithLabelValues(topic).Add(float64(r.ObjectsAfter))
}
