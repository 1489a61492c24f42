package diskless

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of strata_diskless_commits_total, one per batch taken.
const (
	outcomeCommitted = "committed" // committed at new offsets
	outcomeDuplicate = "duplicate" // an idempotent retry, answered with its first offsets
	outcomeRefused   = "refused"   // the coordinator refused it (sequence, epoch, transaction state)
	outcomeTimedOut  = "timed_out" // its object's commit was not done within the commit timeout
	outcomeFailed    = "failed"    // the upload failed, the committer answered nonsense, or the writer closed
	outcomeDropped   = "dropped"   // its waiter gave up before it was sent, so it was not committed
)

type metrics struct {
	buffered    prometheus.Gauge
	uploaded    prometheus.Counter
	objectBytes prometheus.Counter
	upload      prometheus.Histogram
	commit      prometheus.Histogram
	outcomes    *prometheus.CounterVec
	// topicBytes and topicPuts split the objects cut among their topics
	// (shares, buffer.go), for the console's cost model.
	topicBytes *prometheus.CounterVec
	topicPuts  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_diskless_buffered_bytes",
			Help: "Bytes of diskless batches taken and not yet answered (buffered, uploading, committing): what --diskless-buffer-max-bytes bounds."}),
		uploaded: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_diskless_objects_uploaded_total",
			Help: "Diskless commit objects stored in the bucket."}),
		objectBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_diskless_object_bytes_total",
			Help: "Bytes of the diskless commit objects stored, headers included."}),
		upload: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_diskless_upload_seconds",
			Help:    "Time to store a diskless commit object: from its first PUT to the one that stored it, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_diskless_commit_seconds",
			Help:    "Time from a diskless object's cut to its batches' answers, whatever the outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_diskless_commits_total",
			Help: "Diskless batches answered, by outcome: committed, duplicate, refused (by the coordinator), timed_out (the commit timeout passed), failed (the upload failed or the writer closed) or dropped (the producer's request ended before the commit was sent)."},
			[]string{"outcome"}),
		topicBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_diskless_topic_bytes_total",
			Help: "Bytes of a topic's batches in the diskless commit objects this agent cut (headers not included)."},
			[]string{"topic"}),
		topicPuts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_diskless_topic_puts_total",
			Help: "A topic's share of the PUTs of the diskless commit objects this agent cut: each object's one PUT split among the topics in it in proportion to their bytes in it, so the sum over topics is the objects cut."},
			[]string{"topic"}),
	}
	for _, o := range []string{outcomeCommitted, outcomeDuplicate, outcomeRefused, outcomeTimedOut, outcomeFailed, outcomeDropped} {
		m.outcomes.WithLabelValues(o)
	}
	reg.MustRegister(m.buffered, m.uploaded, m.objectBytes, m.upload, m.commit, m.outcomes, m.topicBytes, m.topicPuts)
	return m
}

// countTopics adds one cut object's runs to the per-topic counters,
// each topic named by name.
func (m *metrics) countTopics(runs []*run, name func(topicID [16]byte) string) {
	for id, s := range shares(runs) {
		topic := name(id)
		m.topicBytes.WithLabelValues(topic).Add(float64(s.bytes))
		m.topicPuts.WithLabelValues(topic).Add(s.put)
	}
}
