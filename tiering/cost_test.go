package tiering

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// TestCostCountsEveryStoreRequest: the per-topic counters agree, class by
// class, with objstore's own request counters on the bucket underneath,
// after uploads, a manifest re-read, DeleteRecords and an orphan sweep.
func TestCostCountsEveryStoreRequest(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	b := objstore.NewMetrics(objstore.NewMem(), reg, "mem")
	l := &fakeLog{}
	for range 6 {
		l.add(10, 1)
	}
	l.add(1, 2)
	tr := newTierer(t, b)
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tr.UploadOnce(ctx)
	if err := p.DeleteRecords(ctx, 25); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CleanOrphans(ctx, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	p.Refresh(ctx, time.Now())

	store := map[string]float64{}
	var putBytes float64
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "strata_store_requests_total":
				class := map[string]string{"put": CostPut, "get": CostGet, "get_range": CostGet, "stat": CostGet,
					"list": CostList, "delete": CostDelete}[labels["op"]]
				store[class] += m.GetCounter().GetValue()
			case "strata_store_bytes_total":
				if labels["op"] == "put" {
					putBytes = m.GetCounter().GetValue()
				}
			}
		}
	}
	u := tr.StoreUsage()["t"]
	got := map[string]float64{CostPut: u.Puts, CostGet: u.Gets, CostList: u.Lists, CostDelete: u.Deletes}
	for _, class := range []string{CostPut, CostGet, CostList, CostDelete} {
		if got[class] != store[class] || got[class] == 0 {
			t.Errorf("%s: topic counter %v, store counter %v (want equal and > 0)", class, got[class], store[class])
		}
	}
	if u.BytesWritten != putBytes {
		t.Errorf("bytes written: topic counter %v, store counter %v", u.BytesWritten, putBytes)
	}
	if r, ok := u.PutsPerGiB(); !ok || r != u.Puts/(u.BytesWritten/(1<<30)) {
		t.Errorf("PUTs per GiB %v %v", r, ok)
	}
}

func TestPutsPerGiB(t *testing.T) {
	for _, tc := range []struct {
		u    TopicUsage
		want float64
		ok   bool
	}{
		{TopicUsage{}, 0, false},
		{TopicUsage{Puts: 3}, 0, false},
		{TopicUsage{Puts: 4, BytesWritten: 1 << 30}, 4, true},
		{TopicUsage{Puts: 1, BytesWritten: 1 << 20}, 1024, true},
	} {
		got, ok := tc.u.PutsPerGiB()
		if got != tc.want || ok != tc.ok {
			t.Errorf("%+v: %v %v, want %v %v", tc.u, got, ok, tc.want, tc.ok)
		}
	}
}
