package txn

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics are the transaction coordinators' Prometheus metrics, shared by
// every coordinator an agent loads (Config.Metrics). A nil *Metrics
// records nothing.
type Metrics struct {
	ongoing        prometheus.Gauge
	completed      *prometheus.CounterVec
	timedOut       prometheus.Counter
	markerFailures prometheus.Counter
	completion     prometheus.Histogram
	partitions     prometheus.Gauge
	load           prometheus.Histogram
}

// Outcomes of strata_txn_completed_total.
const (
	outcomeCommitted = "committed"
	outcomeAborted   = "aborted"
)

// NewMetrics registers the coordinators' metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ongoing: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_txn_ongoing",
			Help: "Transactions open or being ended (Ongoing, PrepareCommit, PrepareAbort) on the transaction coordinators loaded here."}),
		completed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_txn_completed_total",
			Help: "Transactions ended, markers written and Complete state durable, by outcome: committed or aborted (timed-out and fenced ones included)."},
			[]string{"outcome"}),
		timedOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_txn_timed_out_total",
			Help: "Transactions the coordinators began to abort because they were open longer than their transaction.timeout.ms."}),
		markerFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_txn_marker_failures_total",
			Help: "Rounds of transaction markers that left some partition unmarked (a leader moved or could not be reached); each is retried."}),
		completion: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_txn_completion_duration_seconds",
			Help:    "From a transaction's Prepare state being durable (EndTxn, a timeout, a fencing InitProducerId, or a new coordinator taking over) to its markers written and its Complete state durable.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}),
		partitions: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_txn_coordinator_partitions",
			Help: "Partitions of __transaction_state whose transaction coordinator is loaded here."}),
		load: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_txn_coordinator_load_duration_seconds",
			Help:    "Time a transaction coordinator took to replay its partition of __transaction_state when it loaded.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
	}
	// Both outcomes show from the start, so a rate of either is defined.
	m.completed.WithLabelValues(outcomeCommitted)
	m.completed.WithLabelValues(outcomeAborted)
	reg.MustRegister(m.ongoing, m.completed, m.timedOut, m.markerFailures, m.completion, m.partitions, m.load)
	return m
}

// isOpen reports whether a transaction in state s counts in strata_txn_ongoing.
func isOpen(s kmsg.TransactionState) bool {
	switch s {
	case kmsg.TransactionStateOngoing, kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		return true
	}
	return false
}

// changed accounts for a transaction moving from state from to state to.
func (m *Metrics) changed(from, to kmsg.TransactionState) {
	if m == nil || isOpen(from) == isOpen(to) {
		return
	}
	if isOpen(to) {
		m.ongoing.Inc()
	} else {
		m.ongoing.Dec()
	}
}

// loaded accounts for a coordinator that loaded in took with n
// transactions open; unloaded for one that closed with n open.
func (m *Metrics) loaded(took time.Duration, n int) {
	if m != nil {
		m.partitions.Inc()
		m.load.Observe(took.Seconds())
		m.ongoing.Add(float64(n))
	}
}

func (m *Metrics) unloaded(n int) {
	if m != nil {
		m.partitions.Dec()
		m.ongoing.Sub(float64(n))
	}
}

func (m *Metrics) completedTxn(commit bool, took time.Duration) {
	if m == nil {
		return
	}
	outcome := outcomeAborted
	if commit {
		outcome = outcomeCommitted
	}
	m.completed.WithLabelValues(outcome).Inc()
	m.completion.Observe(took.Seconds())
}

func (m *Metrics) timedOutTxn() {
	if m != nil {
		m.timedOut.Inc()
	}
}

func (m *Metrics) markersFailed() {
	if m != nil {
		m.markerFailures.Inc()
	}
}
