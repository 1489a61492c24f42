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
		costs: newCostMetrics(),
	}
	if reg != nil {
		reg.MustRegister(m.uploadedBytes, m.uploadedSegments, m.uploadFailures, m.uploadSeconds, m.deletedSegments, m.cacheRequests, m.remoteReadBytes, m.costs)
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
