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
	}
	for _, o := range []string{outcomeCommitted, outcomeDuplicate, outcomeRefused, outcomeTimedOut, outcomeFailed, outcomeDropped} {
		m.outcomes.WithLabelValues(o)
	}
	reg.MustRegister(m.buffered, m.uploaded, m.objectBytes, m.upload, m.commit, m.outcomes)
	return m
}
