package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testwait"
)

// TestConsoleCostModel: records produced to a diskless topic (by clients
// of two agents; Metadata names the agents that take them) and to a
// classic topic of replication factor 3 show, in the console one agent
// gathers from all three, the diskless topic's commit-object PUTs
// (measured and predicted) and the classic topic's replication bytes,
// each topic only its own line; every agent's per-topic PUT shares add
// up to the objects it stored.
func TestConsoleCostModel(t *testing.T) {
	c := disklessCluster(t)
	c.create("dl-cost", 2, 1, map[string]string{metadata.DisklessEnable: "true"})
	c.create("classic-cost", 1, 3, nil)

	value := make([]byte, 1000)
	for i, a := range c.agents[:2] {
		prod := a.client(t, kgo.DefaultProduceTopic("dl-cost"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		for j := range 20 {
			if err := prod.ProduceSync(ctxT(t), &kgo.Record{Key: fmt.Appendf(nil, "%d-%d", i, j), Value: value}).FirstErr(); err != nil {
				t.Fatalf("produce to dl-cost through agent %d: %v", a.id, err)
			}
		}
	}
	prod := c.agents[0].client(t, kgo.DefaultProduceTopic("classic-cost"))
	for range 20 {
		if err := prod.ProduceSync(ctxT(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce to classic-cost: %v", err)
		}
	}

	var dl, classic console.Topic
	var v console.View
	testwait.Until(t, 20*time.Second, func() bool {
		v = consoleView(t, c.agents[2])
		for _, tp := range v.Topics {
			switch tp.Name {
			case "dl-cost":
				dl = tp
			case "classic-cost":
				classic = tp
			}
		}
		return len(v.Errors) == 0 && dl.DisklessCost != nil && dl.DisklessCost.PutsPerSecond > 0 &&
			classic.Replication != nil && classic.Replication.BytesPerSecond > 0
	}, "the console to show dl-cost's PUTs and classic-cost's replication")

	d := dl.DisklessCost
	switch {
	case !dl.Diskless || dl.Replication != nil:
		t.Errorf("dl-cost: diskless %v, replication line %+v; want a diskless topic without one", dl.Diskless, dl.Replication)
	case d.PutsPerGiB == nil || *d.PutsPerGiB <= 0 || d.BytesPerSecond <= 0 || d.MonthlyPutCost <= 0:
		t.Errorf("dl-cost measured: %+v", d)
	case d.PredictedPutsPerSecond <= 0 || d.PredictedPutsPerGiB == nil || d.PredictedMonthlyPutCost <= 0:
		t.Errorf("dl-cost predicted: %+v", d)
	case dl.Usage.Puts <= 0 || dl.Usage.BytesWritten <= 0:
		t.Errorf("dl-cost's store usage %+v lacks its commit objects", dl.Usage)
	case classic.Diskless || classic.DisklessCost != nil || classic.Replication.MonthlyCost <= 0:
		t.Errorf("classic-cost: diskless %v, diskless line %+v, replication %+v", classic.Diskless, classic.DisklessCost, classic.Replication)
	case v.DisklessCommit != (console.CommitSettings{IntervalSeconds: 0.02, Bytes: 8 << 20}):
		t.Errorf("the view's commit settings %+v, want the agents' 20ms and 8 MiB", v.DisklessCommit)
	case v.Store.Diskless.PutsPerSecond < d.PutsPerSecond || v.Store.Replication.BytesPerSecond < classic.Replication.BytesPerSecond:
		t.Errorf("store totals %+v and %+v below the topics' lines", v.Store.Diskless, v.Store.Replication)
	}

	// The agents that took the batches (those Metadata named) counted
	// their objects under the topic's name, and each object's PUT is
	// split, not counted twice.
	var last string
	if !testwait.Poll(10*time.Second, func() bool {
		var total float64
		last = ""
		for _, a := range c.agents {
			m, err := metricstext.Scrape(ctxT(t), "http://"+a.HTTPAddr().String()+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			shares, _ := m.Series("strata_diskless_topic_puts_total", "topic", "dl-cost")
			all, _ := m.Value("strata_diskless_topic_puts_total")
			objects, _ := m.Value("strata_diskless_objects_uploaded_total")
			last += fmt.Sprintf(" agent %d: dl-cost %v of %v, objects %v;", a.id, shares, all, objects)
			if shares != all || math.Abs(all-objects) > 1e-6 {
				return false
			}
			total += shares
		}
		return total > 0
	}) {
		t.Fatalf("the agents' dl-cost PUT shares do not add up to the objects they stored:%s", last)
	}
}

// consoleView is GET /v1/console from a.
func consoleView(t *testing.T, a *running) console.View {
	t.Helper()
	resp, err := http.Get("http://" + a.HTTPAddr().String() + "/v1/console")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/console: %s %v", resp.Status, err)
	}
	var v console.View
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}
