package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testagent"
)

// consoleBrowserTimeout bounds each step in the browser.
const consoleBrowserTimeout = 30 * time.Second

// TestConsole (issue 9): on a 3-agent cluster over MinIO, with a tiered
// topic and a consumer group that committed, the web console served by
// one agent, loaded in headless Chromium, lists the three agents, the
// topic's records and bucket bytes, and the group's lag; the bucket numbers
// equal what `strata tiering status` prints and the lag what `strata group
// describe` prints. It saves screenshots at desktop and phone widths, and
// checks that the page does not scroll sideways at 375 pixels.
func TestConsole(t *testing.T) {
	browser := chromiumPath(t)
	minio := miniotest.Start(t)
	store := minio.StoreURL(minio.NewBucket(t), "strata")
	c := startProcCluster(t, 3, store, minio.Env(), append(slices.Clone(tieringAgentArgs), groupAgentArgs...)...)
	const topic, group = "console-topic", "console-group"
	c.createTopic(topic, 2, 3, tieredTopic)

	// Known records: 150 in partition 0 and 120 in partition 1, in 8 KiB
	// batches so that 16 KiB segments seal and upload.
	produced := map[int32]int{}
	cl := newKgo(t, c.agents[0].Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(8192))
	produce := func(p int32, n int) {
		t.Helper()
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%06d-%0200d", p, produced[p], produced[p])})
			produced[p]++
		}
		if err := cl.ProduceSync(ctxT(t, opTimeout), recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	produce(0, 150)
	produce(1, 120)

	// The group reads everything and commits, then 30 more records arrive
	// in partition 0 that it does not commit: a lag of 30 and 0.
	consumer := newKgo(t, c.agents[0].Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("console-member"))
	read := 0
	deadline := time.Now().Add(opTimeout)
	for read < 270 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		read += consumer.PollFetches(ctx).NumRecords()
		cancel()
	}
	if read != 270 {
		t.Fatalf("the group read %d records, want 270", read)
	}
	if err := consumer.CommitUncommittedOffsets(ctxT(t, opTimeout)); err != nil {
		t.Fatal(err)
	}
	produce(0, 30)

	bin := testagent.Build(t)
	cli := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("strata %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Wait until each partition's leader has uploaded every sealed segment.
	leaders := map[int32]*testagent.Agent{}
	for p := range int32(2) {
		leader, _, _, err := c.partitionState(0, topic, p)
		if err != nil || leader < 0 || int(leader) >= len(c.agents) {
			t.Fatalf("%s-%d: leader %d, %v", topic, p, leader, err)
		}
		leaders[p] = c.agents[leader]
		waitFor(t, fmt.Sprintf("%s-%d's leader to upload its sealed segments", topic, p), func() string {
			out := cli("tiering", "status", "--http", leaders[p].HTTPAddr())
			// SEGMENTS > 0 and LAG-BYTES 0.
			if row := tableRow(out, topic, strconv.Itoa(int(p))); len(row) > 8 && row[5] != "0" && row[8] == "0" {
				return ""
			}
			return out
		})
	}

	// What the CLI prints: the leader's tiering row of each partition, and
	// the group's rows.
	type partitionNumbers struct{ Records, Bucket, Offsets string }
	want := map[string]partitionNumbers{}
	var wantBucket int64
	for p := range int32(2) {
		out := cli("tiering", "status", "--http", leaders[p].HTTPAddr())
		row := tableRow(out, topic, strconv.Itoa(int(p)))
		if len(row) < 8 || row[5] == "0" {
			t.Fatalf("tiering status has no uploaded row for %s-%d:\n%s", topic, p, out)
		}
		bytes, _ := strconv.ParseInt(row[4], 10, 64)
		wantBucket += bytes
		// STORE-START and LAST-UPLOADED, as the console writes a range.
		want[fmt.Sprintf("%s-%d", topic, p)] = partitionNumbers{Records: strconv.Itoa(produced[p]), Bucket: row[4], Offsets: row[6] + "–" + row[7]}
	}
	describe := cli("group", "describe", group, "--bootstrap", c.agents[0].Addr())
	wantLag := map[string][3]string{}
	for p := range 2 {
		row := tableRow(describe, topic, strconv.Itoa(p))
		if len(row) < 5 {
			t.Fatalf("group describe has no row for partition %d:\n%s", p, describe)
		}
		wantLag[fmt.Sprintf("%s-%d", topic, p)] = [3]string{row[2], row[3], row[4]}
	}
	if l := wantLag[topic+"-0"]; l != [3]string{"150", "180", "30"} {
		t.Fatalf("group describe says committed/end/lag %v for partition 0, want 150/180/30:\n%s", l, describe)
	}

	// The console, served by agent 1 (not the one the CLI asked).
	ctx := chromium(t, browser)
	url := "http://" + c.agents[1].HTTPAddr() + "/console/"
	step := browserStep(t, ctx)
	step("open "+url, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitVisible(`body[data-loaded="true"]`))

	type shown struct {
		Agents     string
		AgentRows  int
		Records    string
		Bucket     string
		Partitions map[string]partitionNumbers
		Lag        map[string][3]string
		Members    string
		Errors     string
		// LoadIn is each agent row's bytes in per second, as shown.
		LoadIn []string
	}
	var got shown
	waitFor(t, "the console to show the cluster as the CLI does", func() string {
		sctx, cancel := context.WithTimeout(ctx, consoleBrowserTimeout)
		defer cancel()
		js, err := chromedp.Run(sctx, chromedp.Evaluate[string](consoleScrapeJS(topic, group)))
		if err != nil {
			return err.Error()
		}
		got = shown{}
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			return err.Error()
		}
		var diffs []string
		check := func(what, have, want string) {
			if have != want {
				diffs = append(diffs, fmt.Sprintf("%s: console %q, want %q", what, have, want))
			}
		}
		check("agents", got.Agents, "3")
		check("agent rows", strconv.Itoa(got.AgentRows), "3")
		check("topic records", got.Records, strconv.Itoa(produced[0]+produced[1]))
		check("topic bucket bytes", got.Bucket, strconv.FormatInt(wantBucket, 10))
		for k, w := range want {
			check(k+" partition", fmt.Sprint(got.Partitions[k]), fmt.Sprint(w))
		}
		for k, w := range wantLag {
			check(k+" committed/end/lag", fmt.Sprint(got.Lag[k]), fmt.Sprint(w))
		}
		if !strings.Contains(got.Members, "console-member") || !strings.Contains(got.Members, topic+":0,1") {
			diffs = append(diffs, fmt.Sprintf("group members %q lack console-member with %s:0,1", got.Members, topic))
		}
		check("errors", got.Errors, "")
		// Each agent's measured load (issue 31): its leaders took the
		// records in within the moving average's window.
		if !slices.ContainsFunc(got.LoadIn, func(s string) bool { return s != "" && s != "0 B" }) {
			diffs = append(diffs, fmt.Sprintf("no agent row shows bytes in per second: %q", got.LoadIn))
		}
		return strings.Join(diffs, "; ")
	})
	dir := artifactsDir(t)
	saveScreenshot(t, ctx, filepath.Join(dir, "console.png"))

	// A phone's width: tables scroll inside their boxes, the page does not.
	step("narrow the window", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile, chromedp.EmulateTouch))
	waitFor(t, "the page to fit 375 pixels", func() string {
		sctx, cancel := context.WithTimeout(ctx, consoleBrowserTimeout)
		defer cancel()
		w, err := chromedp.Run(sctx, chromedp.Evaluate[[]int](`[window.innerWidth, document.documentElement.clientWidth, document.documentElement.scrollWidth]`))
		if err != nil {
			return err.Error()
		}
		if len(w) != 3 || w[0] != 375 || w[2] > w[1] {
			return fmt.Sprintf("window, visible and page widths %v: want a 375-pixel window and no sideways scrolling", w)
		}
		return ""
	})
	saveScreenshot(t, ctx, filepath.Join(dir, "console-narrow.png"))
}

// consoleScrapeJS reads the numbers the console shows for topic and group
// (the exact counts are in the cells' .n spans) as a JSON string.
func consoleScrapeJS(topic, group string) string {
	q, _ := json.Marshal(map[string]string{"topic": topic, "group": group})
	return `(() => {
  const q = ` + string(q) + `;
  const n = (root, sel) => { const e = root && root.querySelector(sel + " .n"); return e ? e.textContent : ""; };
  const card = document.querySelector("#agent-count .value");
  const out = {Agents: card ? card.textContent : "", AgentRows: document.querySelectorAll("#agents tbody tr").length,
    Partitions: {}, Lag: {}, Members: "", Errors: document.getElementById("errors").textContent,
    LoadIn: [...document.querySelectorAll("#agents tbody td[data-col=in]")].map(td => td.textContent)};
  const block = [...document.querySelectorAll("[data-topic-block]")].find(b => b.dataset.topicBlock === q.topic);
  if (block) {
    const sum = block.querySelector("tr[data-topic]");
    out.Records = n(sum, ".records");
    out.Bucket = n(sum, ".bucket-bytes");
    for (const r of block.querySelectorAll("tr[data-partition]")) {
      out.Partitions[r.dataset.partition] = {Records: n(r, ".records"), Bucket: n(r, ".bucket-bytes"),
        Offsets: r.querySelector(".bucket-offsets").textContent};
    }
  }
  const g = [...document.querySelectorAll("[data-group]")].find(b => b.dataset.group === q.group);
  if (g) {
    for (const r of g.querySelectorAll("tr[data-lag]")) out.Lag[r.dataset.lag] = [n(r, ".committed"), n(r, ".end"), n(r, ".lag")];
    out.Members = g.textContent;
  }
  return JSON.stringify(out);
})()`
}

// tableRow is the fields of the first line of a CLI table that starts with
// these fields.
func tableRow(table string, first ...string) []string {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(first) && slices.Equal(f[:len(first)], first) {
			return f
		}
	}
	return nil
}

// chromiumPath is Debian's chromium. Without it the test fails (it is part
// of the suite; scripts/test.sh installs it), except under -short.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testing.Short() {
		t.Skip("chromium is not installed (-short)")
	}
	t.Fatal("the console test needs Chromium: install Debian's chromium (apt-get install chromium; scripts/test.sh does when run as root)")
	return ""
}

// browserStep runs a browser's actions under consoleBrowserTimeout and
// fails t, naming what, when they do not complete.
func browserStep(t *testing.T, ctx context.Context) func(what string, actions ...chromedp.Action[chromedp.Void]) {
	return func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, consoleBrowserTimeout)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
}

// chromium starts a headless browser with a fresh profile, stopped when the
// test ends. Background networking, component updates and sync are off:
// on a closed network Chromium otherwise hangs on them.
func chromium(t *testing.T, path string) context.Context {
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true), // screenshots as wide as the window
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first run starts the browser, which lives as long as the context
	// of that run: so it gets ctx itself, and a timer bounds the wait.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	timer := time.NewTimer(consoleBrowserTimeout)
	defer timer.Stop()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start %s: %v", path, err)
		}
	case <-timer.C:
		cancel()
		t.Fatalf("start %s: no answer within %v", path, consoleBrowserTimeout)
	}
	return ctx
}

// artifactsDir is $STRATA_ARTIFACTS, or testdata/out (ignored by git).
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("STRATA_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func saveScreenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, consoleBrowserTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	t.Logf("console screenshot: %s", abs)
}
