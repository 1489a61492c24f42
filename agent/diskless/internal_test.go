package diskless

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// bufferedBatches counts the batches in the buffer, not yet cut.
func (w *Writer) bufferedBatches() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.buf.runs {
		n += len(r.batches)
	}
	return n
}

// waitingAdds counts the Adds waiting for room.
func (w *Writer) waitingAdds() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiting)
}

// TestMetricNames: the names of design §7a, "Flags and metrics".
func TestMetricNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	w, err := NewWriter(testConfig(), objstore.NewMem(), newFakeCommitter(), reg, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.metrics.upload.Observe(1)
	w.metrics.commit.Observe(1)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	want := []string{
		"strata_diskless_buffered_bytes", "strata_diskless_commit_seconds", "strata_diskless_commits_total",
		"strata_diskless_object_bytes_total", "strata_diskless_objects_uploaded_total", "strata_diskless_upload_seconds",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("metrics %v, want %v", names, want)
	}
}
