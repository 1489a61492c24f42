package kafka

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the wire server's Prometheus metrics. Build with NewMetrics;
// a nil *Metrics records nothing.
type Metrics struct{ m *metrics }

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
	conns    prometheus.Gauge
	refusals prometheus.Counter
}

// NewMetrics registers the server's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_requests_total", Help: "Kafka requests handled, by API key and outcome.",
		}, []string{"api", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "strata_kafka_request_duration_seconds", Help: "Time to handle a Kafka request, by API key.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
		}, []string{"api"}),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_topic_bytes_in_total", Help: "Record batch bytes appended, by topic.",
		}, []string{"topic"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_topic_bytes_out_total", Help: "Record batch bytes returned by Fetch, by topic.",
		}, []string{"topic"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_kafka_connections", Help: "Kafka connections open.",
		}),
		refusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_kafka_connections_refused_total", Help: "Kafka connections closed as soon as accepted because --max-connections were open.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.conns, m.refusals)
	}
	return &Metrics{m: m}
}

func (m *Metrics) get() *metrics {
	if m == nil {
		return nil
	}
	return m.m
}

func apiName(key int16) string { return strconv.Itoa(int(key)) }

func (m *metrics) observe(key int16, start time.Time, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.requests.WithLabelValues(apiName(key), outcome).Inc()
	m.latency.WithLabelValues(apiName(key)).Observe(time.Since(start).Seconds())
}

func (m *metrics) opened(n int) {
	if m != nil {
		m.conns.Add(float64(n))
	}
}

func (m *metrics) refused() {
	if m != nil {
		m.refusals.Inc()
	}
}

func (m *metrics) in(topic string, n int) {
	if m != nil {
		m.bytesIn.WithLabelValues(topic).Add(float64(n))
	}
}

func (m *metrics) out(topic string, n int) {
	if m != nil {
		m.bytesOut.WithLabelValues(topic).Add(float64(n))
	}
}
