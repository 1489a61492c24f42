package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// chartsProduceFor is how long the producer runs before the charts load.
const chartsProduceFor = 30 * time.Second

// TestConsoleCharts (issue 32, item 1): on a 3-agent cluster, a producer
// writes to a topic for 30 s while a consumer group reads part of it and
// commits; then the console's chart page, served by agent 1 (which leads
// only some of the partitions), is loaded in headless Chromium. The
// topic's produce and fetch charts must have points with traffic, the
// group's lag chart points, the store and agent charts data, every agent
// a history ring; the page loads nothing from another host and breaks no
// rule of its Content-Security-Policy. It saves screenshots at desktop
// and phone widths.
func TestConsoleCharts(t *testing.T) {
	browser := chromiumPath(t)
	store := "file://" + t.TempDir()
	c := startProcCluster(t, 3, store, nil, append(slices.Clone(tieringAgentArgs), groupAgentArgs...)...)
	const topic, group = "charts-topic", "charts-group"
	c.createTopic(topic, 3, 3, tieredTopic)

	// A producer at about 100 records a second for chartsProduceFor.
	producer := newKgo(t, c.agents[0].Addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(20*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var produceErr error
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(chartsProduceFor)
		for i := 0; ; i++ {
			select {
			case <-deadline:
				produceErr = producer.Flush(ctxT(t, opTimeout))
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			producer.Produce(ctx, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "record-%06d-%0300d", i, i)}, func(_ *kgo.Record, err error) {
				if err != nil && ctx.Err() == nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
	})
	// The group reads and commits for a while, then stops: it lags.
	consumer := newKgo(t, c.agents[0].Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	read := 0
	for stop := time.Now().Add(chartsProduceFor / 3); time.Now().Before(stop); {
		pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
		read += consumer.PollFetches(pctx).NumRecords()
		pcancel()
		if err := consumer.CommitUncommittedOffsets(ctxT(t, opTimeout)); err != nil {
			t.Fatal(err)
		}
	}
	consumer.Close()
	wg.Wait()
	if produceErr != nil {
		t.Fatalf("produce: %v", produceErr)
	}
	if read == 0 {
		t.Fatal("the group read nothing")
	}

	bctx := chromium(t, browser)
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, consoleBrowserTimeout)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	// Record every refusal of the Content-Security-Policy, from the start
	// of each document.
	step("watch for CSP violations", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.cspViolations = []; document.addEventListener("securitypolicyviolation", e => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));`})
		return err
	}))
	url := "http://" + c.agents[1].HTTPAddr() + "/console/charts.html"
	step("open "+url, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitVisible(`body[data-loaded="true"]`))

	type chartState struct {
		Points  map[string]int // chart id -> values drawn (data-points)
		Topic   map[string]int // chart id -> points above 0 of the topic's line
		Group   int            // points of the group's line in the lag chart
		Agents  int            // rows of the rings table
		Rings   []int64        // ring bytes
		Errors  string
		CSP     []string
		Foreign []string // resources from another origin
	}
	var got chartState
	waitFor(t, "the charts to show the topic, the group, the store and the agents", func() string {
		sctx, cancel := context.WithTimeout(bctx, consoleBrowserTimeout)
		defer cancel()
		js, err := chromedp.Run(sctx, chromedp.Evaluate[string](chartsScrapeJS(topic, group)))
		if err != nil {
			return err.Error()
		}
		got = chartState{}
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			return err.Error()
		}
		var diffs []string
		// 30 s at 5 s: six points, less the first (no rate yet) and a
		// slot the producer may have half filled.
		for _, id := range []string{"topic-bytes-in", "topic-records-in", "topic-bytes-out", "topic-records-out"} {
			if got.Topic[id] < 3 {
				diffs = append(diffs, fmt.Sprintf("%s: %d points above 0 for %s, want 3 or more", id, got.Topic[id], topic))
			}
		}
		if got.Group < 2 {
			diffs = append(diffs, fmt.Sprintf("group-lag: %d points for %s, want 2 or more", got.Group, group))
		}
		for _, id := range []string{"store-requests", "store-cost", "agent-p99", "agent-fsync"} {
			if got.Points[id] == 0 {
				diffs = append(diffs, id+": no points")
			}
		}
		if got.Agents != 3 {
			diffs = append(diffs, fmt.Sprintf("%d agents in the rings table, want 3", got.Agents))
		}
		if got.Errors != "" {
			diffs = append(diffs, "errors: "+got.Errors)
		}
		return strings.Join(diffs, "; ")
	})
	if len(got.CSP) > 0 || len(got.Foreign) > 0 {
		t.Errorf("the page broke its Content-Security-Policy %q, or loaded from another origin %q", got.CSP, got.Foreign)
	}
	t.Logf("points drawn per chart %v; the topic's points above 0 %v; history ring bytes by agent %v", got.Points, got.Topic, got.Rings)
	dir := artifactsDir(t)
	saveScreenshot(t, bctx, filepath.Join(dir, "console-charts.png"))

	step("narrow the window", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile, chromedp.EmulateTouch))
	waitFor(t, "the charts to fit 375 pixels", func() string {
		sctx, cancel := context.WithTimeout(bctx, consoleBrowserTimeout)
		defer cancel()
		w, err := chromedp.Run(sctx, chromedp.Evaluate[[]int](`[window.innerWidth, document.documentElement.clientWidth, document.documentElement.scrollWidth,
			Math.max(...[...document.querySelectorAll(".chart canvas")].map(c => c.getBoundingClientRect().right))]`))
		if err != nil {
			return err.Error()
		}
		if len(w) != 4 || w[0] != 375 || w[2] > w[1] || w[3] > w[1] {
			return fmt.Sprintf("window, visible and page widths, right edge of the charts %v: want a 375-pixel window, no sideways scrolling, charts inside", w)
		}
		return ""
	})
	saveScreenshot(t, bctx, filepath.Join(dir, "console-charts-narrow.png"))
}

// chartsScrapeJS reads what the chart page drew, as a JSON string: the
// values in each chart (its data-points), and the points above 0 of the
// topic's and the group's lines in uPlot's own data.
func chartsScrapeJS(topic, group string) string {
	q, _ := json.Marshal(map[string]string{"topic": topic, "group": group})
	return `(() => {
  const q = ` + string(q) + `;
  const line = (id, label, above) => {
    const c = window.strataCharts[id];
    if (!c) return 0;
    const i = c.u.series.findIndex(s => s.label === label);
    return i < 1 ? 0 : c.u.data[i].filter(v => v !== null && v > above).length;
  };
  const out = {Points: {}, Topic: {}, Rings: [], Errors: document.getElementById("errors").textContent,
    CSP: window.cspViolations || [],
    Foreign: performance.getEntriesByType("resource").map(r => r.name).filter(n => new URL(n).origin !== location.origin)};
  for (const e of document.querySelectorAll(".chart")) out.Points[e.id] = Number(e.dataset.points || 0);
  for (const id of ["topic-bytes-in", "topic-bytes-out", "topic-records-in", "topic-records-out"]) out.Topic[id] = line(id, q.topic, 0);
  out.Group = line("group-lag", q.group, -1);
  const rows = document.querySelectorAll("#rings tbody tr");
  out.Agents = rows.length;
  for (const r of rows) out.Rings.push(Number(r.querySelector(".ring-bytes .n").textContent));
  return JSON.stringify(out);
})()`
}
