package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/internal/metricstext"
)

// TestConsoleViewAndCostMetrics: on one agent with a tiered topic, the
// console's JSON shows the topic's records and the bucket bytes tiering
// reports, the per-topic store counters, and a PUTs-per-GiB figure that
// /metrics exports too; the page's files are served from the binary and
// the plain-text status page is unchanged.
func TestConsoleViewAndCostMetrics(t *testing.T) {
	dir := t.TempDir()
	a := start(t, tieringTestConfig(t, filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "bucket")), nil)
	cl := a.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "tiered", 1, tieredTopicConfigs)
	produceValues(t, cl, "tiered", 0, 300)
	waitTiered(t, a, "tiered", 16384+2*8192)

	base := "http://" + a.HTTPAddr().String()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v", path, resp.Status, err)
		}
		return string(b)
	}
	var v console.View
	if err := json.Unmarshal([]byte(get("/v1/console")), &v); err != nil {
		t.Fatal(err)
	}
	var remote int64
	for _, s := range a.tier.Statuses() {
		remote += s.RemoteBytes
	}
	var topic *console.Topic
	for i := range v.Topics {
		if v.Topics[i].Name == "tiered" {
			topic = &v.Topics[i]
		}
	}
	switch {
	case v.Counts.Agents != 1 || len(v.Errors) != 0:
		t.Fatalf("agents %+v, errors %v", v.Agents, v.Errors)
	case topic == nil:
		t.Fatalf("no topic tiered in %+v", v.Topics)
	case topic.Records != 300 || topic.BucketBytes != remote || remote == 0:
		t.Errorf("records %d, bucket bytes %d; want 300 and %d", topic.Records, topic.BucketBytes, remote)
	case topic.Usage.Puts == 0 || topic.Usage.BytesWritten < float64(remote) || topic.PutsPerGiB == nil:
		t.Errorf("store usage %+v, PUTs/GiB %v", topic.Usage, topic.PutsPerGiB)
	case v.Store.MonthlyCost.Total <= 0 || v.Prices != console.DefaultPrices():
		t.Errorf("store %+v, prices %+v", v.Store, v.Prices)
	}
	metrics, err := metricstext.Scrape(ctxT(t), base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{{"strata_store_topic_requests_total", "op", "PUT", "topic", "tiered"},
		{"strata_store_topic_bytes_total", "direction", "write", "topic", "tiered"}, {"strata_store_topic_puts_per_gib", "topic", "tiered"}} {
		if _, ok := metrics.Series(want[0], want[1:]...); !ok {
			t.Errorf("/metrics lacks %s%v", want[0], want[1:])
		}
	}
	if page := get("/console/"); !strings.Contains(page, `<script src="app.js">`) {
		t.Errorf("/console/ is not the page:\n%s", page)
	}
	if js := get("/console/app.js"); !strings.Contains(js, "v1/console") {
		t.Error("/console/app.js does not poll /v1/console")
	}
	if status := get("/"); !strings.HasPrefix(status, "strata agent ") {
		t.Errorf("the status page changed:\n%s", status)
	}
}
