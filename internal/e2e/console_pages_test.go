package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/internal/testagent"
)

// TestConsolePages (issue 32, item 5): on one agent with 120 topics
// (load-000 ... load-099, and orders.eu-west_00 ... _19, of which _07 has
// three partitions of known records) and a group whose id needs escaping
// in a URL, in headless Chromium:
//
//   - the overview lists the first 100 topics, says "1–100 of 120" and
//     turns to the next page, which the URL keeps;
//   - typing part of a name in the search box leaves only the matching
//     topics, and the search is in the URL; a shared URL with ?q= shows
//     the same;
//   - /console/topics/<name>, opened by its URL, shows that topic's
//     partitions with their records, the group reading it, and its
//     browse link; the overview's topic link leads there;
//   - /console/groups/<id> shows the group's lag and its member, and
//     /console/agents/<id> the agent with the replicas it leads;
//   - the charts linked from a topic's page draw that topic alone;
//
// and no page breaks its Content-Security-Policy. It saves
// console-topic.png, console-group.png and console-agent.png.
func TestConsolePages(t *testing.T) {
	browser := chromiumPath(t)
	a := testagent.Start(t, testagent.Options{})
	adm := newAdmin(t, a.Addr())
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("load-%03d", i))
	}
	for i := range 20 {
		if i != 7 {
			names = append(names, fmt.Sprintf("orders.eu-west_%02d", i))
		}
	}
	resp, err := adm.CreateTopics(ctxT(t, opTimeout), 1, 1, nil, names...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create %d topics: %v", len(names), err)
	}
	const topic, group = "orders.eu-west_07", "pages group/1 ü"
	createTopic(t, adm, topic, 3, nil)

	// Known records: 5, 7 and 9 in partitions 0-2 of topic, and some in
	// load-000 so that the charts have two topics to tell apart.
	cl := newKgo(t, a.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p, n := range []int{5, 7, 9} {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "v-%d-%d", p, i)})
		}
	}
	recs = append(recs, &kgo.Record{Topic: "load-000", Value: []byte("other")})
	if err := cl.ProduceSync(ctxT(t, opTimeout), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The group reads partition 0-2 and commits; two more records arrive
	// in partition 1: lag 0, 2, 0. Its member stays in the group.
	consumer := newKgo(t, a.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("pages-member"))
	read := 0
	for deadline := time.Now().Add(opTimeout); read < 21 && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		read += consumer.PollFetches(ctx).NumRecords()
		cancel()
	}
	if read != 21 {
		t.Fatalf("the group read %d records, want 21", read)
	}
	if err := consumer.CommitUncommittedOffsets(ctxT(t, opTimeout)); err != nil {
		t.Fatal(err)
	}
	more := []*kgo.Record{{Topic: topic, Partition: 1, Value: []byte("late-0")}, {Topic: topic, Partition: 1, Value: []byte("late-1")}}
	if err := cl.ProduceSync(ctxT(t, opTimeout), more...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var overall console.View
	getJSON(t, "http://"+a.HTTPAddr()+"/v1/console", &overall)
	agentID := overall.ServedBy

	bctx := chromium(t, browser)
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, consoleBrowserTimeout)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	eval := func(js string, out any) error {
		sctx, cancel := context.WithTimeout(bctx, consoleBrowserTimeout)
		defer cancel()
		s, err := chromedp.Run(sctx, chromedp.Evaluate[string](js))
		if err != nil {
			return err
		}
		return json.Unmarshal([]byte(s), out)
	}
	step("watch for CSP violations", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.cspViolations = []; document.addEventListener("securitypolicyviolation", e => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));`})
		return err
	}))
	base := "http://" + a.HTTPAddr() + "/console/"

	// The overview: its lists, their paging, and the search.
	type overview struct {
		Search, Query, Shown, Matched, GroupsShown string
		Topics, Groups                             []string
		Prev, Next                                 bool
		CSP                                        []string
	}
	scrapeOverview := func() (overview, error) {
		var o overview
		err := eval(`(() => {
  const paging = document.getElementById("topics-paging");
  return JSON.stringify({Search: location.search, Query: document.body.dataset.query || "", Shown: paging.querySelector(".shown").textContent,
    Matched: paging.dataset.matched || "", GroupsShown: document.querySelector("#groups-paging .shown").textContent,
    Topics: [...document.querySelectorAll("[data-topic-block]")].map(b => b.dataset.topicBlock),
    Groups: [...document.querySelectorAll("[data-group]")].map(b => b.dataset.group),
    Prev: !document.getElementById("topics-prev").disabled, Next: !document.getElementById("topics-next").disabled,
    CSP: window.cspViolations || []});
})()`, &o)
		return o, err
	}
	waitOverview := func(what string, check func(o overview) string) overview {
		t.Helper()
		var o overview
		waitFor(t, what, func() string {
			var err error
			if o, err = scrapeOverview(); err != nil {
				return err.Error()
			}
			if len(o.CSP) > 0 {
				t.Fatalf("the overview broke its Content-Security-Policy: %q", o.CSP)
			}
			return check(o)
		})
		return o
	}
	step("open "+base, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base), chromedp.WaitVisible(`body[data-loaded="true"]`))
	waitOverview("the first 100 of 120 topics", func(o overview) string {
		if len(o.Topics) != 100 || o.Topics[0] != "load-000" || o.Topics[99] != "load-099" || o.Matched != "120" ||
			o.Shown != "showing 1–100 of 120 topics" || o.Prev || !o.Next {
			return fmt.Sprintf("%d topics %v..., %q (matched %s), previous %v, next %v", len(o.Topics), o.Topics[:min(len(o.Topics), 2)], o.Shown, o.Matched, o.Prev, o.Next)
		}
		if !slices.Equal(o.Groups, []string{group}) {
			return fmt.Sprintf("groups %q, want %q", o.Groups, group)
		}
		return ""
	})
	step("turn to the next page", chromedp.Click(`#topics-next`))
	waitOverview("the topics 101–120", func(o overview) string {
		if len(o.Topics) != 20 || o.Topics[0] != "orders.eu-west_00" || o.Shown != "showing 101–120 of 120 topics" ||
			!o.Prev || o.Next || !strings.Contains(o.Search, "topics_page=2") {
			return fmt.Sprintf("%d topics, %q, previous %v, next %v, URL query %q", len(o.Topics), o.Shown, o.Prev, o.Next, o.Search)
		}
		return ""
	})
	step("type in the search box", chromedp.SendKeys(`#q`, "EU-WEST_1"))
	waitOverview("only the topics matching EU-WEST_1", func(o overview) string {
		want := []string{"orders.eu-west_10", "orders.eu-west_11", "orders.eu-west_12", "orders.eu-west_13", "orders.eu-west_14",
			"orders.eu-west_15", "orders.eu-west_16", "orders.eu-west_17", "orders.eu-west_18", "orders.eu-west_19"}
		if o.Query != "EU-WEST_1" || !slices.Equal(o.Topics, want) || o.Shown != "10 topics matching “EU-WEST_1”" || o.Next ||
			len(o.Groups) != 0 || !strings.Contains(o.Search, "q=EU-WEST_1") || strings.Contains(o.Search, "topics_page") {
			return fmt.Sprintf("query %q, topics %q, %q, groups %q, URL query %q", o.Query, o.Topics, o.Shown, o.Groups, o.Search)
		}
		return ""
	})
	shared := base + "?q=" + url.QueryEscape("group/1")
	step("open "+shared, chromedp.Navigate(shared), chromedp.WaitVisible(`body[data-loaded="true"]`))
	waitOverview("the shared search", func(o overview) string {
		if len(o.Topics) != 0 || !slices.Equal(o.Groups, []string{group}) || o.GroupsShown != "1 group matching “group/1”" {
			return fmt.Sprintf("topics %q, groups %q (%q)", o.Topics, o.Groups, o.GroupsShown)
		}
		return ""
	})

	// The topic's page, from the overview's link and then by its URL.
	step("search for the topic", chromedp.Navigate(base+"?q="+topic), chromedp.WaitVisible(`body[data-loaded="true"]`))
	waitOverview("the topic alone", func(o overview) string {
		if !slices.Equal(o.Topics, []string{topic}) {
			return fmt.Sprintf("topics %q", o.Topics)
		}
		return ""
	})
	step("follow the topic's link", chromedp.Click(`[data-topic-block="`+topic+`"] .title a[data-link="topics"]`),
		chromedp.WaitVisible(`body[data-found="true"]`))
	type detail struct {
		Path, Title, Background, Problem string
		Partitions                       map[string]string
		Lag                              map[string]string
		Links                            map[string]string
		Cards                            map[string]string
		Rows                             []string
		CSP                              []string
	}
	scrapeDetail := func() (detail, error) {
		var d detail
		err := eval(`(() => {
  const n = (r, sel) => { const e = r.querySelector(sel + " .n"); return e ? e.textContent : ""; };
  const out = {Path: location.pathname, Title: document.getElementById("title").textContent,
    Background: getComputedStyle(document.body).backgroundColor, Problem: document.getElementById("problem").hidden ? "" : document.getElementById("problem").textContent,
    Partitions: {}, Lag: {}, Links: {}, Cards: {}, Rows: [], CSP: window.cspViolations || []};
  for (const r of document.querySelectorAll("tr[data-partition]")) out.Partitions[r.dataset.partition] = n(r, ".records");
  for (const r of document.querySelectorAll("tr[data-lag]")) out.Lag[r.dataset.lag] = [n(r, ".committed"), n(r, ".end"), n(r, ".lag")].join("/");
  for (const r of document.querySelectorAll("tr[data-topic-group]")) out.Lag["group " + r.dataset.topicGroup] = n(r, ".lag");
  for (const a of document.querySelectorAll("#links a, .group a[data-link], #agent-row a[data-link]")) out.Links[a.className.split(" ")[0] + " " + a.textContent] = a.getAttribute("href");
  for (const c of document.querySelectorAll(".card")) out.Cards[c.querySelector(".label").textContent] = c.querySelector(".value").textContent;
  for (const r of document.querySelectorAll("tr[data-replica]")) out.Rows.push(r.dataset.replica + " " + r.querySelector(".role").textContent);
  for (const r of document.querySelectorAll("tr[data-member]")) out.Rows.push(r.textContent);
  return JSON.stringify(out);
})()`, &d)
		return d, err
	}
	waitDetail := func(what string, check func(d detail) string) detail {
		t.Helper()
		var d detail
		waitFor(t, what, func() string {
			var err error
			if d, err = scrapeDetail(); err != nil {
				return err.Error()
			}
			if len(d.CSP) > 0 {
				t.Fatalf("%s broke its Content-Security-Policy: %q", d.Path, d.CSP)
			}
			if d.Problem != "" {
				return "the page says: " + d.Problem
			}
			// The stylesheet, one directory up, applies.
			if d.Background != "rgb(246, 247, 249)" {
				return "the page's background is " + d.Background + ": style.css did not load"
			}
			return check(d)
		})
		return d
	}
	checkTopic := func(d detail) string {
		want := map[string]string{topic + "-0": "5", topic + "-1": "9", topic + "-2": "9"}
		if d.Path != "/console/topics/"+topic || d.Title != "Topic "+topic || !mapsEqual(d.Partitions, want) {
			return fmt.Sprintf("at %s, title %q, partitions' records %v, want %v", d.Path, d.Title, d.Partitions, want)
		}
		if d.Lag["group "+group] != "2" || d.Cards["partitions"] != "3" || d.Cards["records"] != "23" {
			return fmt.Sprintf("the group's lag in the topic %q, cards %v", d.Lag["group "+group], d.Cards)
		}
		if b := d.Links["browse browse messages"]; b != "../browse.html?topic="+topic {
			return fmt.Sprintf("the browse link is %q", b)
		}
		return ""
	}
	waitDetail("the topic's page, from the overview", checkTopic)
	topicURL := base + "topics/" + url.PathEscape(topic)
	step("open "+topicURL, chromedp.Navigate(topicURL), chromedp.WaitVisible(`body[data-found="true"]`))
	waitDetail("the topic's page, by its URL", checkTopic)
	saveScreenshot(t, bctx, filepath.Join(artifactsDir(t), "console-topic.png"))

	// The group's page: its id escaped as one path segment.
	groupURL := base + "groups/" + url.PathEscape(group)
	step("open "+groupURL, chromedp.Navigate(groupURL), chromedp.WaitVisible(`body[data-found="true"]`))
	waitDetail("the group's page", func(d detail) string {
		want := map[string]string{topic + "-0": "5/5/0", topic + "-1": "7/9/2", topic + "-2": "9/9/0"}
		if d.Title != "Group "+group || !mapsEqual(d.Lag, want) || d.Cards["total lag"] != "2" || d.Cards["members"] != "1" {
			return fmt.Sprintf("title %q, lag %v (want %v), cards %v", d.Title, d.Lag, want, d.Cards)
		}
		if len(d.Rows) != 1 || !strings.Contains(d.Rows[0], "pages-member") || !strings.Contains(d.Rows[0], topic+":0,1,2") {
			return fmt.Sprintf("member rows %q", d.Rows)
		}
		if l := d.Links["item-link "+topic]; l != "../topics/"+topic {
			return fmt.Sprintf("the lag rows' topic link is %q", l)
		}
		return ""
	})
	saveScreenshot(t, bctx, filepath.Join(artifactsDir(t), "console-group.png"))

	// The agent's page.
	agentURL := base + "agents/" + strconv.Itoa(int(agentID))
	partitions := strconv.Itoa(overall.Counts.Partitions)
	step("open "+agentURL, chromedp.Navigate(agentURL), chromedp.WaitVisible(`body[data-found="true"]`))
	waitDetail("the agent's page", func(d detail) string {
		if d.Title != "Agent "+strconv.Itoa(int(agentID)) || d.Cards["state"] == "" ||
			d.Cards["replicas"] != partitions || d.Cards["leaders"] != partitions {
			return fmt.Sprintf("title %q, cards %v, want %s replicas and leaders", d.Title, d.Cards, partitions)
		}
		if !slices.Contains(d.Rows, topic+"-1 leader") || len(d.Rows) != overall.Counts.Partitions {
			return fmt.Sprintf("%d replica rows, %q..., want %s with %s-1 leader", len(d.Rows), d.Rows[:min(len(d.Rows), 3)], partitions, topic)
		}
		return ""
	})
	// The page lists every replica: the screenshot is of the window.
	saveWindowScreenshot(t, bctx, filepath.Join(artifactsDir(t), "console-agent.png"))

	// An unknown topic's page says so.
	step("open an unknown topic", chromedp.Navigate(base+"topics/no-such-topic"), chromedp.WaitVisible(`body[data-found="false"]`))
	var problem string
	if err := eval(`JSON.stringify(document.getElementById("problem").textContent)`, &problem); err != nil || problem != `topic "no-such-topic" not found` {
		t.Errorf("an unknown topic's page says %q (%v)", problem, err)
	}

	// The topic page's charts link: the charts of that topic alone, once
	// the history has rates for both topics written to.
	step("open the topic's charts", chromedp.Navigate(topicURL), chromedp.WaitVisible(`body[data-found="true"]`),
		chromedp.Click(`#links a.charts`), chromedp.WaitVisible(`#only`))
	waitFor(t, "the charts of "+topic+" alone", func() string {
		var labels map[string][]string
		if err := eval(`JSON.stringify({only: [document.getElementById("only").textContent],
  narrowed: (window.strataCharts["topic-bytes-in"] || {labels: []}).labels,
  all: Object.keys(window.strataHistory.series).filter(k => k.startsWith("topic\u0001") && k.endsWith("\u0001bytes_in")).map(k => k.split("\u0001")[1]).sort()})`, &labels); err != nil {
			return err.Error()
		}
		if !strings.HasPrefix(labels["only"][0], "Only topic "+topic+".") || !slices.Equal(labels["narrowed"], []string{topic}) ||
			!slices.Contains(labels["all"], "load-000") {
			return fmt.Sprintf("%v", labels)
		}
		return ""
	})
}

// saveWindowScreenshot saves what the window shows, where saveScreenshot
// saves the whole page.
func saveWindowScreenshot(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, consoleBrowserTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(path)
	t.Logf("console screenshot: %s", abs)
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
