package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/tiering"
)

// browseOrder is the JSON value of order i, as produced: compact.
func browseOrder(i int) []byte {
	return fmt.Appendf(nil, `{"id":%d,"customer":"c-%03d","items":[{"sku":"A-%d","qty":2}],"total":12.50}`, i, i%7, i%3)
}

// TestConsoleBrowser (issue 32, item 2): on one agent, a topic holds
// known orders (a key, a JSON value, a header) and then a committed and
// an aborted transaction. The message browser, reached from the topic's
// link on the console's first page and driven through its form in
// headless Chromium, shows order 17's key and its value indented at
// offset 17, pages on, and, read_uncommitted from the end, the
// transaction markers as rows and the aborted records marked; the page's
// state is in its URL, and it breaks no rule of its Content-Security-
// Policy. It saves a screenshot.
func TestConsoleBrowser(t *testing.T) {
	browser := chromiumPath(t)
	a := testagent.Start(t, testagent.Options{})
	const topic, orders = "orders", 40
	createTopic(t, newAdmin(t, a.Addr()), topic, 2, nil)
	cl := newKgo(t, a.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range orders {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: fmt.Appendf(nil, "order-%04d", i), Value: browseOrder(i),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("web")}}})
	}
	recs = append(recs, &kgo.Record{Topic: topic, Partition: 1, Key: []byte("other"), Value: []byte("plain text")})
	if err := cl.ProduceSync(ctxT(t, opTimeout), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Offsets 40-41 commit (marker 42), 43-44 abort (marker 45).
	txn := newKgo(t, a.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("browse-txn"))
	for _, commit := range []bool{true, false} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			r := &kgo.Record{Topic: topic, Partition: 0, Key: fmt.Appendf(nil, "txn-%v-%d", commit, i), Value: []byte(`{"txn":true}`)}
			if err := txn.ProduceSync(ctxT(t, opTimeout), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := txn.EndTransaction(ctxT(t, opTimeout), end); err != nil {
			t.Fatal(err)
		}
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
	overview := "http://" + a.HTTPAddr() + "/console/"
	step("open "+overview, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(overview), chromedp.WaitVisible(`body[data-loaded="true"]`))
	step("follow the topic's browse link", chromedp.Click(`[data-topic-block="orders"] a.browse`),
		chromedp.WaitVisible(`body[data-loaded="true"] #browse`))

	// The form: partition 0, from offset 17, 5 rows.
	step("fill the form", chromedp.Evaluate[chromedp.Void](`(() => {
  const set = (id, v) => { const e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event("change")); };
  set("partition", "0"); set("from-kind", "offset"); set("limit", "5");
})()`), chromedp.SendKeys(`#from-offset`, "17"), chromedp.Click(`#browse button[type="submit"]`))

	type shown struct {
		Search, Key, Value, Header, Summary, Errors string
		Offsets                                     []string
		Controls, Aborted                           []string
		CSP                                         []string
	}
	scrape := func(offset int) (shown, error) {
		var got shown
		err := eval(fmt.Sprintf(`(() => {
  const row = document.querySelector('#records tr[data-partition="0"][data-offset="%d"]');
  const text = (r, sel) => { const e = r && r.querySelector(sel); return e ? e.textContent : ""; };
  return JSON.stringify({Search: location.search, Key: text(row, "td.key pre"), Value: text(row, "td.value pre"), Header: text(row, "td.headers"),
    Summary: document.getElementById("summary").textContent, Errors: document.getElementById("errors").hidden ? "" : document.getElementById("errors").textContent,
    Offsets: [...document.querySelectorAll("#records tbody tr[data-offset]")].map(r => r.dataset.offset),
    Controls: [...document.querySelectorAll("#records tr.control")].map(r => r.dataset.offset + " " + r.querySelector("td.marker").firstChild.textContent),
    Aborted: [...document.querySelectorAll("#records tr.aborted")].map(r => r.dataset.offset + " " + text(r, ".badge.aborted")),
    CSP: window.cspViolations || []});
})()`, offset), &got)
		return got, err
	}
	wantValue := `{
  "id": 17,
  "customer": "c-003",
  "items": [
    {
      "sku": "A-2",
      "qty": 2
    }
  ],
  "total": 12.50
}`
	var got shown
	waitFor(t, "the browser to show order 17 at offset 17", func() string {
		var err error
		if got, err = scrape(17); err != nil {
			return err.Error()
		}
		switch {
		case got.Errors != "":
			return "errors: " + got.Errors
		case !strings.Contains(got.Search, "from=offset%3A17") || !strings.Contains(got.Search, "partition=0") || !strings.Contains(got.Search, "topic=orders"):
			return "the URL does not hold the state: " + got.Search
		case got.Key != "order-0017" || got.Value != wantValue || got.Header != "source: web":
			return fmt.Sprintf("offset 17 shows key %q, value %q, headers %q", got.Key, got.Value, got.Header)
		case !slices.Equal(got.Offsets, []string{"17", "18", "19", "20", "21"}):
			return fmt.Sprintf("rows at offsets %v, want 17-21", got.Offsets)
		}
		return ""
	})

	step("page on", chromedp.Click(`#next`))
	waitFor(t, "the next page", func() string {
		var err error
		if got, err = scrape(22); err != nil {
			return err.Error()
		}
		if !strings.Contains(got.Search, "from=offset%3A22") || got.Key != "order-0022" || !slices.Equal(got.Offsets, []string{"22", "23", "24", "25", "26"}) {
			return fmt.Sprintf("URL %s, rows %v, key %q", got.Search, got.Offsets, got.Key)
		}
		return ""
	})

	// A shared link: the end of partition 0, read_uncommitted.
	shared := "http://" + a.HTTPAddr() + "/console/browse.html?topic=orders&partition=0&from=end&limit=9&isolation=read_uncommitted"
	step("open "+shared, chromedp.Navigate(shared), chromedp.WaitVisible(`body[data-loaded="true"]`))
	waitFor(t, "the markers and the aborted records", func() string {
		var err error
		if got, err = scrape(37); err != nil {
			return err.Error()
		}
		switch {
		case !slices.Equal(got.Offsets, []string{"37", "38", "39", "40", "41", "42", "43", "44", "45"}):
			return fmt.Sprintf("rows at offsets %v, want 37-45", got.Offsets)
		case len(got.Controls) != 2 || !strings.HasPrefix(got.Controls[0], "42 COMMIT marker, producer ") || !strings.HasPrefix(got.Controls[1], "45 ABORT marker, producer "):
			return fmt.Sprintf("marker rows %q", got.Controls)
		case !slices.Equal(got.Aborted, []string{"43 aborted", "44 aborted"}):
			return fmt.Sprintf("aborted rows %q, want 43 and 44", got.Aborted)
		}
		return ""
	})
	if len(got.CSP) > 0 {
		t.Errorf("the page broke its Content-Security-Policy: %q", got.CSP)
	}
	saveScreenshot(t, bctx, filepath.Join(artifactsDir(t), "console-browse.png"))

	// At a phone's width the table scrolls in its box, the page does not.
	step("narrow the window", chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile, chromedp.EmulateTouch))
	waitFor(t, "the browser to fit 375 pixels", func() string {
		var w []int
		if err := eval(`JSON.stringify([window.innerWidth, document.documentElement.clientWidth, document.documentElement.scrollWidth])`, &w); err != nil {
			return err.Error()
		}
		if len(w) != 3 || w[0] != 375 || w[2] > w[1] {
			return fmt.Sprintf("window, visible and page widths %v: want a 375-pixel window and no sideways scrolling", w)
		}
		return ""
	})
}

// TestConsoleBrowserReadsBucket: on an agent over MinIO whose topic keeps
// about two small segments on disk, once the older segments are uploaded
// and deleted locally, GET /v1/console/records from offset 0 returns the
// records that only the bucket holds, with their keys and values.
func TestConsoleBrowserReadsBucket(t *testing.T) {
	minio := miniotest.Start(t)
	store := minio.StoreURL(minio.NewBucket(t), "strata")
	a := testagent.Start(t, testagent.Options{ExtraArgs: append(slices.Clone(tieringAgentArgs), "--store", store), Env: minio.Env()})
	const topic = "browse-tiered"
	createTopic(t, newAdmin(t, a.Addr()), topic, 1, tieredTopic)
	cl := newKgo(t, a.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(8192))
	const n = 400
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k%04d", i), Value: fmt.Appendf(nil, "v%04d-%0200d", i, i)})
	}
	if err := cl.ProduceSync(ctxT(t, opTimeout), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	waitUploadsDone(t, a.HTTPAddr(), topic, 1)
	var st struct{ Partitions []tiering.Status }
	getJSON(t, "http://"+a.HTTPAddr()+"/v1/tiering", &st)
	var localStart int64 = -1
	for _, s := range st.Partitions {
		if s.Topic == topic {
			localStart = s.LocalStart
		}
	}
	if localStart < 50 {
		t.Fatalf("the local log starts at %d; want the first 50 offsets in the bucket only", localStart)
	}

	var p console.Page
	getJSON(t, "http://"+a.HTTPAddr()+"/v1/console/records?topic="+topic+"&partition=0&from=offset:0&limit=50&decode=text", &p)
	if len(p.Records) != 50 || p.Partitions[0].LogStart != 0 || p.Next != "offset:50" {
		t.Fatalf("from offset 0: %d records, partition %+v, next %q, notes %q; want 50 from the bucket", len(p.Records), p.Partitions, p.Next, p.Notes)
	}
	for i, r := range p.Records {
		if wantKey, wantValue := fmt.Sprintf("k%04d", i), fmt.Sprintf("v%04d-%0200d", i, i); r.Offset != int64(i) || r.Key.Text != wantKey || r.Value.Text != wantValue {
			t.Fatalf("row %d: offset %d key %q value %.20q; want %d, %s, %.20s", i, r.Offset, r.Key.Text, r.Value.Text, i, wantKey, wantValue)
		}
	}
	t.Logf("read offsets 0-49 while the local log starts at %d", localStart)
}

// getJSON GETs url and decodes its 200 answer into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v %s", url, resp.Status, err, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
