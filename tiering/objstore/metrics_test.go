package objstore_test

import (
	"io"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/objstore/objstoretest"
)

func TestMetricsAcceptance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Bucket {
		return objstore.NewMetrics(newMem(t), prometheus.NewRegistry(), "mem")
	})
}

func TestMetricsCounts(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	b := objstore.NewMetrics(newMem(t), reg, "mem")
	etag, err := b.Put(ctx, "k", []byte("hello"), objstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Put(ctx, "k", []byte("x"), objstore.PutOptions{IfMatch: etag + "stale"})
	b.Get(ctx, "k")
	b.Get(ctx, "missing")
	rc, err := b.GetRange(ctx, "k", 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(rc)
	rc.Close()
	b.GetRange(ctx, "k", 99, 1)

	want := `
# HELP strata_store_requests_total Object store requests, by operation and outcome.
# TYPE strata_store_requests_total counter
strata_store_requests_total{backend="mem",op="get",outcome="not_found"} 1
strata_store_requests_total{backend="mem",op="get",outcome="ok"} 1
strata_store_requests_total{backend="mem",op="get_range",outcome="invalid_range"} 1
strata_store_requests_total{backend="mem",op="get_range",outcome="ok"} 1
strata_store_requests_total{backend="mem",op="put",outcome="ok"} 1
strata_store_requests_total{backend="mem",op="put",outcome="precondition_failed"} 1
# HELP strata_store_bytes_total Object bytes read from or written to the object store, by operation.
# TYPE strata_store_bytes_total counter
strata_store_bytes_total{backend="mem",op="get"} 5
strata_store_bytes_total{backend="mem",op="get_range"} 3
strata_store_bytes_total{backend="mem",op="put"} 5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "strata_store_requests_total", "strata_store_bytes_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "strata_store_request_duration_seconds"); n != 3 {
		t.Fatalf("duration histograms = %d, want one per op used (3)", n)
	}
}

// Two buckets of one backend on one registry share the collectors instead
// of failing to register.
func TestMetricsSharedRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	b1 := objstore.NewMetrics(newMem(t), reg, "fs")
	b2 := objstore.NewMetrics(newMem(t), reg, "fs")
	other := objstore.NewMetrics(newMem(t), reg, "s3") // another backend, same names
	b1.Delete(t.Context(), "a")
	b2.Delete(t.Context(), "b")
	other.Delete(t.Context(), "c")
	want := `
# HELP strata_store_requests_total Object store requests, by operation and outcome.
# TYPE strata_store_requests_total counter
strata_store_requests_total{backend="fs",op="delete",outcome="ok"} 2
strata_store_requests_total{backend="s3",op="delete",outcome="ok"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "strata_store_requests_total"); err != nil {
		t.Fatal(err)
	}
}

// PutReader is counted as a put, with its size as the bytes.
func TestMetricsPutReader(t *testing.T) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	b := objstore.NewMetrics(newMem(t), reg, "mem")
	if _, err := b.PutReader(ctx, "k", strings.NewReader("hello, reader"), 13, objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	b.PutReader(ctx, "k", strings.NewReader("x"), 1, objstore.PutOptions{IfAbsent: true})
	want := `
# HELP strata_store_requests_total Object store requests, by operation and outcome.
# TYPE strata_store_requests_total counter
strata_store_requests_total{backend="mem",op="put",outcome="ok"} 1
strata_store_requests_total{backend="mem",op="put",outcome="precondition_failed"} 1
# HELP strata_store_bytes_total Object bytes read from or written to the object store, by operation.
# TYPE strata_store_bytes_total counter
strata_store_bytes_total{backend="mem",op="put"} 13
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "strata_store_requests_total", "strata_store_bytes_total"); err != nil {
		t.Fatal(err)
	}
}
