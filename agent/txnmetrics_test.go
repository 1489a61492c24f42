package agent

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testwait"
)

// TestTxnMetrics: after a committed and an aborted transaction, /metrics
// shows one of each completed, nothing open, both completions timed, and
// the coordinator's partition loaded (and its load timed).
func TestTxnMetrics(t *testing.T) {
	r := start(t, txnConfig(t), nil)
	createTopic(t, r.client(t), "txn-metrics", 1, nil)
	cl := txnClient(t, r, "tx-metrics")
	for _, commit := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := produceInTxn(t, cl, "txn-metrics", "v"); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctxT(t), commit); err != nil {
			t.Fatalf("end (commit %v): %v", commit, err)
		}
	}
	// EndTxn answers once the Prepare state is durable; the markers and
	// the Complete state follow.
	testwait.Until(t, 20*time.Second, func() bool {
		return counterValue(t, r, "strata_txn_completed_total", "outcome", "committed") == 1 &&
			counterValue(t, r, "strata_txn_completed_total", "outcome", "aborted") == 1
	}, "one committed and one aborted transaction in /metrics")
	for _, m := range []struct {
		name string
		want func(float64) bool
	}{
		{"strata_txn_ongoing", func(v float64) bool { return v == 0 }},
		{"strata_txn_completion_duration_seconds_count", func(v float64) bool { return v == 2 }},
		{"strata_txn_completion_duration_seconds_sum", func(v float64) bool { return v > 0 }},
		{"strata_txn_timed_out_total", func(v float64) bool { return v == 0 }},
		{"strata_txn_marker_failures_total", func(v float64) bool { return v == 0 }},
		// The id's partition of __transaction_state, at least: a loop
		// loads the others led here too.
		{"strata_txn_coordinator_partitions", func(v float64) bool { return v >= 1 }},
		{"strata_txn_coordinator_load_duration_seconds_count", func(v float64) bool { return v >= 1 }},
	} {
		if v := counterValue(t, r, m.name); !m.want(v) {
			t.Errorf("%s = %v", m.name, v)
		}
	}
}
