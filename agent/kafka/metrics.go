package kafka

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/quota"
)

// Metrics are the wire server's Prometheus metrics. Build with NewMetrics;
// a nil *Metrics records nothing.
type Metrics struct{ m *metrics }

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	bytesIn  *prometheus.CounterVec
	bytesOut *prometheus.CounterVec
	// recordsIn and recordsOut count the records of those batches, as
	// their headers say (a compressed batch is not opened).
	recordsIn  *prometheus.CounterVec
	recordsOut *prometheus.CounterVec
	conns      prometheus.Gauge
	accepted   prometheus.Counter
	refusals   *prometheus.CounterVec

	fetchSessionCount      prometheus.Gauge
	fetchSessionPartitions prometheus.Gauge
	fetchSessionEvictions  prometheus.Counter
	fetchesBySession       *prometheus.CounterVec
	decompressionChecks    *prometheus.CounterVec

	requestBytesInUse   prometheus.Gauge
	requestBudgetWaits  prometheus.Counter
	autoCreateDeferrals *prometheus.CounterVec

	authentications *prometheus.CounterVec
	denials         *prometheus.CounterVec

	throttledRequests *prometheus.CounterVec
	throttleTime      *prometheus.CounterVec
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
		recordsIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_topic_records_in_total", Help: "Records appended by Produce, by topic (the record counts of the batches strata_topic_bytes_in_total counts).",
		}, []string{"topic"}),
		recordsOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_topic_records_out_total", Help: "Records returned by Fetch to consumers, by topic (the record counts of the batches strata_topic_bytes_out_total counts; follower replicas' fetches are in neither).",
		}, []string{"topic"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_kafka_connections", Help: "Kafka connections open.",
		}),
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_kafka_connections_accepted_total", Help: "Kafka connections accepted and admitted, on every listener: with strata_kafka_connections, how often clients and other agents connect anew.",
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_connections_refused_total", Help: "Kafka connections closed as soon as accepted, by the limit they were over: total (--max-connections), per_ip (--max-connections-per-ip), rate (--max-connection-creation-rate) or ip_quota (the address's connection_creation_rate client quota).",
		}, []string{"reason"}),
		fetchSessionCount: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_kafka_fetch_sessions", Help: "Incremental fetch sessions (KIP-227) in the cache (Kafka's NumIncrementalFetchSessions).",
		}),
		fetchSessionPartitions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_kafka_fetch_session_partitions", Help: "Partitions held by the incremental fetch sessions in the cache (Kafka's NumIncrementalFetchPartitionsCached).",
		}),
		fetchSessionEvictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_kafka_fetch_session_evictions_total", Help: "Incremental fetch sessions evicted to make room for a new one.",
		}),
		fetchesBySession: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_fetch_requests_total", Help: "Fetch requests, by how their session served them: sessionless, full (opening a session), incremental, or error (unknown session or wrong epoch).",
		}, []string{"session"}),
		authentications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_sasl_authentications_total", Help: "SASL authentications on SASL listeners, by mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, or none for a connection that sent another request first) and outcome (ok, failed, reauthenticated: a KIP-368 re-authentication succeeded, expired: the connection was closed because its session ended without one, or refused: the connection was closed for a request before authentication).",
		}, []string{"mechanism", "outcome"}),
		decompressionChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_fetch_decompression_checks_total", Help: "Batches stored before Produce bounded decompression that a fetch checked, by verdict: good, or bad (over the limit, served as an empty batch).",
		}, []string{"verdict"}),
		requestBytesInUse: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_kafka_request_bytes_in_use", Help: "Bytes of requests read and not yet handled, taken from --queued-max-request-bytes.",
		}),
		requestBudgetWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_kafka_request_budget_waits_total", Help: "Requests whose connection stopped reading to wait for room in --queued-max-request-bytes.",
		}),
		autoCreateDeferrals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_auto_create_deferred_total", Help: "Topics a Metadata request would have auto-created that were answered LEADER_NOT_AVAILABLE instead, for the client to ask again, by the bound they were over: rate (--auto-create-topics-rate) or request (--auto-create-topics-per-request).",
		}, []string{"reason"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_authorization_denials_total", Help: "Checks the ACL authorizer (--authorizer acl) denied, by resource type and operation; one request can count several (one per topic or group it names).",
		}, []string{"resource_type", "operation"}),
		throttledRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_quota_throttled_total", Help: "Requests over a client quota, answered with throttle_time_ms and their connection muted, by quota key; for connection_creation_rate, connections refused.",
		}, []string{"quota"}),
		throttleTime: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_kafka_quota_throttle_seconds_total", Help: "Throttle time given to clients over a client quota (Kafka's throttle-time), by quota key.",
		}, []string{"quota"}),
	}
	for _, reason := range []string{deferredRate, deferredRequest} {
		m.autoCreateDeferrals.WithLabelValues(reason) // exported at 0 from the start
	}
	for _, key := range []string{quota.ProducerByteRate, quota.ConsumerByteRate, quota.RequestPercentage, quota.ConnectionCreationRate} {
		m.throttledRequests.WithLabelValues(key) // exported at 0 from the start
		m.throttleTime.WithLabelValues(key)
	}
	for _, reason := range []string{refusedTotal, refusedPerIP, refusedRate, refusedIPQuota} {
		m.refusals.WithLabelValues(reason) // exported at 0 from the start
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.bytesIn, m.bytesOut, m.recordsIn, m.recordsOut, m.conns, m.accepted, m.refusals,
			m.fetchSessionCount, m.fetchSessionPartitions, m.fetchSessionEvictions, m.fetchesBySession,
			m.decompressionChecks, m.requestBytesInUse, m.requestBudgetWaits, m.autoCreateDeferrals, m.authentications, m.denials,
			m.throttledRequests, m.throttleTime)
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
		if n > 0 {
			m.accepted.Add(float64(n))
		}
	}
}

func (m *metrics) refused(reason string) {
	if m != nil {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

// in counts a produced batch of n bytes holding records records.
func (m *metrics) in(topic string, n, records int) {
	if m != nil {
		m.bytesIn.WithLabelValues(topic).Add(float64(n))
		m.recordsIn.WithLabelValues(topic).Add(float64(records))
	}
}

// out counts the batches a fetch returns.
func (m *metrics) out(topic string, batches []byte) {
	if m != nil {
		m.bytesOut.WithLabelValues(topic).Add(float64(len(batches)))
		m.recordsOut.WithLabelValues(topic).Add(float64(recordCount(batches)))
	}
}

// recordCount sums the record counts of the batch headers in b, up to
// the first that is short or not a v2 batch (a fetch may end in part of
// one). It reads headers only: no CRC, no decompression.
func recordCount(b []byte) int {
	n := 0
	for len(b) > 0 {
		size, err := batch.PeekSize(b)
		if err != nil || size > len(b) {
			break
		}
		h, err := batch.ParseHeader(b)
		if err != nil {
			break
		}
		n += int(h.RecordCount)
		b = b[size:]
	}
	return n
}

func (m *metrics) fetchSessions(sessions, partitions int) {
	if m != nil {
		m.fetchSessionCount.Set(float64(sessions))
		m.fetchSessionPartitions.Set(float64(partitions))
	}
}

func (m *metrics) fetchSessionEvicted() {
	if m != nil {
		m.fetchSessionEvictions.Inc()
	}
}

func (m *metrics) fetched(kind fetchContextKind) {
	if m != nil {
		m.fetchesBySession.WithLabelValues(kind.String()).Inc()
	}
}

// denied counts one check the authorizer refused.
func (m *metrics) denied(typ kmsg.ACLResourceType, op kmsg.ACLOperation) {
	if m != nil {
		m.denials.WithLabelValues(typ.String(), op.String()).Inc()
	}
}

// throttled counts one request (or connection) over the quota key and
// the throttle it was given.
func (m *metrics) throttled(key string, d time.Duration) {
	if m != nil {
		m.throttledRequests.WithLabelValues(key).Inc()
		m.throttleTime.WithLabelValues(key).Add(d.Seconds())
	}
}

func (m *metrics) authenticated(mechanism string, ok bool) {
	if m != nil {
		outcome := "ok"
		if !ok {
			outcome = "failed"
		}
		m.authentications.WithLabelValues(mechanism, outcome).Inc()
	}
}

// sasl counts an outcome other than ok and failed (the metric's help).
func (m *metrics) sasl(mechanism, outcome string) {
	if m != nil {
		m.authentications.WithLabelValues(mechanism, outcome).Inc()
	}
}

func (m *metrics) saslRefused() {
	if m != nil {
		m.authentications.WithLabelValues("none", "refused").Inc()
	}
}

func (m *metrics) decompressionChecked(bad bool) {
	if m != nil {
		verdict := "good"
		if bad {
			verdict = "bad"
		}
		m.decompressionChecks.WithLabelValues(verdict).Inc()
	}
}

func (m *metrics) requestBytes(inUse int64) {
	if m != nil {
		m.requestBytesInUse.Set(float64(inUse))
	}
}

func (m *metrics) requestBudgetWaited() {
	if m != nil {
		m.requestBudgetWaits.Inc()
	}
}

func (m *metrics) autoCreateDeferred(reason string, n int) {
	if m != nil && n > 0 {
		m.autoCreateDeferrals.WithLabelValues(reason).Add(float64(n))
	}
}
