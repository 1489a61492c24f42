package txn

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestMetrics: the coordinator counts what it does — open transactions
// up and down, a commit whose markers failed twice, a timed-out abort —
// and a coordinator that loads an open transaction counts it until it
// ends, and its partition while it is loaded.
func TestMetrics(t *testing.T) {
	f := &fixture{t: t, log: &memLog{}, markers: &fakeMarkers{}, ids: &counterIDs{next: 1000},
		now: time.UnixMilli(1_700_000_000_000), metrics: NewMetrics(prometheus.NewRegistry())}
	m := f.metrics
	f.c = f.load(nil)
	check := func(what string, got, want float64) {
		t.Helper()
		if got != want {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
	check("partitions loaded", testutil.ToFloat64(m.partitions), 1)
	if histogramCount(t, m.load) != 1 {
		t.Fatal("the load was not timed")
	}

	pid, epoch, _ := f.init("t1", -1, -1)
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB, false); err != nil {
		t.Fatal(err)
	}
	check("ongoing after an add", testutil.ToFloat64(m.ongoing), 1)
	f.markers.mu.Lock()
	f.markers.failures = 2
	f.markers.mu.Unlock()
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	check("ongoing after the commit", testutil.ToFloat64(m.ongoing), 0)
	check("committed", testutil.ToFloat64(m.completed.WithLabelValues(outcomeCommitted)), 1)
	check("marker failures", testutil.ToFloat64(m.markerFailures), 2)
	if n := histogramCount(t, m.completion); n != 1 {
		t.Fatalf("%d completions timed, want 1", n)
	}

	pid2, epoch2, _ := f.init("t2", -1, -1)
	if err := f.c.AddPartitions(ctx, "t2", pid2, epoch2, partsAB, false); err != nil {
		t.Fatal(err)
	}
	f.advance(2 * time.Minute)
	if n, err := f.c.AbortTimedOut(ctx); err != nil || n != 1 {
		t.Fatalf("AbortTimedOut: %d %v", n, err)
	}
	f.waitState("t2", kmsg.TransactionStateCompleteAbort)
	check("timed out", testutil.ToFloat64(m.timedOut), 1)
	check("aborted", testutil.ToFloat64(m.completed.WithLabelValues(outcomeAborted)), 1)
	check("ongoing after the abort", testutil.ToFloat64(m.ongoing), 0)

	// A transaction open when its coordinator stops counts again when
	// the next one loads it, until it ends there.
	pid3, epoch3, _ := f.init("t3", -1, -1)
	if err := f.c.AddPartitions(ctx, "t3", pid3, epoch3, partsAB, false); err != nil {
		t.Fatal(err)
	}
	f.c.Close()
	check("partitions after close", testutil.ToFloat64(m.partitions), 0)
	check("ongoing after close", testutil.ToFloat64(m.ongoing), 0)
	f.c = f.load(nil)
	check("ongoing after a reload", testutil.ToFloat64(m.ongoing), 1)
	if _, _, err := f.c.EndTxn(ctx, "t3", pid3, epoch3, false, false); err != nil {
		t.Fatal(err)
	}
	f.waitState("t3", kmsg.TransactionStateCompleteAbort)
	check("ongoing at the end", testutil.ToFloat64(m.ongoing), 0)
	check("aborted at the end", testutil.ToFloat64(m.completed.WithLabelValues(outcomeAborted)), 2)
	check("partitions at the end", testutil.ToFloat64(m.partitions), 1)
}
