package agent

import (
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/internal/tlstest"
)

// browsePage GETs /v1/console/records?query from a and decodes the page.
func browsePage(t *testing.T, a *running, query string) console.Page {
	t.Helper()
	resp, err := http.Get("http://" + a.HTTPAddr().String() + "/v1/console/records?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("records?%s: %s %v %s", query, resp.Status, err, b)
	}
	var p console.Page
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("records?%s: %v\n%s", query, err, b)
	}
	return p
}

// rowsOf lists a page's rows as "offset:key" (data) or "offset:TYPE/producer"
// (markers), with the transaction outcome after a slash.
func rowsOf(p console.Page) string {
	var out []string
	for _, r := range p.Records {
		s := fmt.Sprintf("%d:", r.Offset)
		switch {
		case r.Control != nil:
			s += fmt.Sprintf("%s/%d", r.Control.Type, r.ProducerID)
		case r.Key != nil && r.Key.Encoding != console.EncodingNull:
			s += r.Key.Text
		default:
			s += r.Value.Text
		}
		if r.Txn != "" {
			s += "/" + r.Txn
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestBrowseRecords: the message browser's endpoint on one agent pages a
// partition forward and back from an offset, the start, the end and a
// timestamp, filters by key, shows JSON values indented and headers, and
// merges all partitions by time.
func TestBrowseRecords(t *testing.T) {
	a := start(t, testConfig(filepath.Join(t.TempDir(), "data")), nil)
	cl := a.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "browse", 2, nil)
	base := time.UnixMilli(1_700_000_000_000)
	var recs []*kgo.Record
	for i := range 30 {
		recs = append(recs, &kgo.Record{Topic: "browse", Partition: 0, Key: fmt.Appendf(nil, "k-%02d", i),
			Value: fmt.Appendf(nil, `{"n":%d,"tags":["a","b"]}`, i), Timestamp: base.Add(time.Duration(i) * time.Second),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("test")}}})
	}
	// Partition 1: between partition 0's records in time, at 0.5 s, 10.5 s
	// and 29.5 s.
	for i, at := range []time.Duration{500 * time.Millisecond, 10500 * time.Millisecond, 29500 * time.Millisecond} {
		recs = append(recs, &kgo.Record{Topic: "browse", Partition: 1, Key: fmt.Appendf(nil, "p1-%d", i),
			Value: []byte{0xff, byte(i)}, Timestamp: base.Add(at)})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		query, rows, prev, next string
	}{
		{"partition=0&from=offset:10&limit=3", "10:k-10 11:k-11 12:k-12", "before:10", "offset:13"},
		{"partition=0&from=before:10&limit=3", "7:k-07 8:k-08 9:k-09", "before:7", "offset:10"},
		{"partition=0&from=before:2&limit=3", "0:k-00 1:k-01", "", "offset:2"},
		{"partition=0&from=start&limit=2", "0:k-00 1:k-01", "", "offset:2"},
		{"partition=0&from=end&limit=2", "28:k-28 29:k-29", "before:28", ""},
		{"partition=0&from=offset:28&limit=5", "28:k-28 29:k-29", "before:28", ""},
		{"partition=0&from=timestamp:1700000020000&limit=2", "20:k-20 21:k-21", "before:20", "offset:22"},
		// A key filter: forward, the first K matches and the page ends at
		// the last; back, the last K before the offset.
		{"partition=0&from=start&limit=3&key=2", "2:k-02 12:k-12 20:k-20", "", "offset:21"},
		{"partition=0&from=before:25&limit=2&key=k-2", "23:k-23 24:k-24", "before:23", "offset:25"},
		{"partition=0&from=end&limit=10&key=nothing", "", "", ""},
		// All partitions, by time.
		{"partition=all&from=start&limit=3", "0:k-00 0:p1-0 1:k-01", "", ""},
		{"partition=all&from=end&limit=3", "28:k-28 29:k-29 2:p1-2", "", ""},
		{"partition=all&from=timestamp:1700000010000&limit=3", "10:k-10 1:p1-1 11:k-11", "", ""},
	} {
		p := browsePage(t, a, "topic=browse&"+c.query)
		if got := rowsOf(p); got != c.rows || p.Prev != c.prev || p.Next != c.next {
			t.Errorf("%s: rows %q prev %q next %q; want %q, %q, %q", c.query, got, p.Prev, p.Next, c.rows, c.prev, c.next)
		}
	}

	p := browsePage(t, a, "topic=browse&partition=0&from=offset:7&limit=1")
	r := p.Records[0]
	wantValue := "{\n  \"n\": 7,\n  \"tags\": [\n    \"a\",\n    \"b\"\n  ]\n}"
	if r.Value.Encoding != console.EncodingJSON || r.Value.Text != wantValue || r.Timestamp != base.Add(7*time.Second).UnixMilli() ||
		len(r.Headers) != 1 || r.Headers[0].Key != "source" || r.Headers[0].Value.Text != "test" {
		t.Errorf("offset 7: %+v, value %+v; want the value indented, its timestamp and header", r, r.Value)
	}
	for _, c := range []struct{ decode, encoding, text string }{
		{"text", "text", `{"n":7,"tags":["a","b"]}`}, {"hex", "hex", "7b226e223a37"}, {"json", "json", wantValue},
	} {
		v := browsePage(t, a, "topic=browse&partition=0&from=offset:7&limit=1&decode="+c.decode).Records[0].Value
		if string(v.Encoding) != c.encoding || !strings.HasPrefix(v.Text, c.text) {
			t.Errorf("decode=%s: %+v", c.decode, v)
		}
	}
	if v := browsePage(t, a, "topic=browse&partition=0&from=offset:7&limit=1&max_value_bytes=16").Records[0].Value; !v.Truncated || len(v.Text) > 16 || v.Size != 24 {
		t.Errorf("max_value_bytes=16: %+v, want 16 bytes of 24, truncated", v)
	}
	if v := browsePage(t, a, "topic=browse&partition=1&from=start&limit=1").Records[0].Value; v.Encoding != console.EncodingHex || v.Text != "ff00" {
		t.Errorf("a binary value: %+v, want hex", v)
	}
	if pp := p.Partitions[0]; pp.LogStart != 0 || pp.End != 30 || pp.ReadFrom != 7 || pp.ReadTo != 8 || p.Stopped != console.StopLimit {
		t.Errorf("partition %+v, stopped %s", pp, p.Stopped)
	}
}

// TestBrowseTransactions: under read_uncommitted the browser shows the
// markers as rows and each transactional record's outcome (aborted when
// its producer's ABORT follows in the page; unknown when no marker does);
// under read_committed the aborted records are not shown and the page
// ends at the last stable offset.
func TestBrowseTransactions(t *testing.T) {
	a := start(t, testConfig(filepath.Join(t.TempDir(), "data")), nil)
	createTopic(t, a.client(t), "txn", 1, nil)
	w := &txnWriter{t: t, p: localPartition(a, "txn", 0), seq: map[int64]int32{}}
	w.data(12, "a1") // 0: aborted
	w.data(13, "c1") // 1: committed
	w.data(12, "a2") // 2: aborted
	w.end(12, false) // 3
	w.end(13, true)  // 4
	w.data(-1, "plain")
	w.data(14, "open") // 6: its transaction is still open

	p := browsePage(t, a, "topic=txn&partition=0&from=start&isolation=read_uncommitted")
	want := "0:a1/aborted 1:c1/committed 2:a2/aborted 3:ABORT/12 4:COMMIT/13 5:plain 6:open/unknown"
	if got := rowsOf(p); got != want {
		t.Errorf("read_uncommitted: %s, want %s", got, want)
	}
	// A page that ends before the markers cannot tell.
	if got := rowsOf(browsePage(t, a, "topic=txn&partition=0&from=start&limit=2")); got != "0:a1/unknown 1:c1/unknown" {
		t.Errorf("a page before the markers: %s", got)
	}
	p = browsePage(t, a, "topic=txn&partition=0&from=start&isolation=read_committed")
	if got := rowsOf(p); got != "1:c1/committed 3:ABORT/12 4:COMMIT/13 5:plain" || p.Partitions[0].End != 6 {
		t.Errorf("read_committed: %s, end %d; want the committed records and markers before the open transaction at 6", got, p.Partitions[0].End)
	}
}

// TestBrowseNeedsTopicRead: on an agent with --authorizer acl and
// certificate principals on HTTPS, the browser's records need READ on
// the topic (an ACL made with kadm): bob reads "visible" but gets 403 for
// "hidden", a client without credentials 401, the token reads both; the
// rest of the console stays open, as --http-require-auth-for names
// nothing.
func TestBrowseNeedsTopicRead(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cluster CA")
	agentCert := ca.Issue(t, "agent", pkix.Name{CommonName: "agent-0", OrganizationalUnit: []string{"agents"}})
	viewer := ca.Issue(t, "viewer", pkix.Name{CommonName: "Bob", OrganizationalUnit: []string{"ops"}})
	const token = "YnJvd3NlLXByaW5jaXBhbC10ZXN0LXRva2Vu"
	cfg := testConfig(filepath.Join(dir, "data"))
	cfg.HTTPTLS, cfg.HTTPTLSClientAuth = true, "requested"
	cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile = agentCert.CertFile, agentCert.KeyFile, ca.CertFile
	cfg.SSLPrincipalMappingRules = `RULE:^CN=([^,]*),OU=(ops|agents)$/$1/L`
	cfg.Authorizer, cfg.SuperUsers = "acl", "User:ANONYMOUS" // the PLAINTEXT listener's clients
	cfg.HTTPTokenFile = writeTokens(t, token)
	a := start(t, cfg, nil)
	cl := a.client(t)
	for _, topic := range []string{"visible", "hidden"} {
		createTopic(t, cl, topic, 1, nil)
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("secret of " + topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := kadm.NewClient(cl).CreateACLs(ctxT(t), kadm.NewACLs().Allow("User:bob").Topics("visible").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		t.Fatal(err)
	}
	bob, none := httpsClient(t, ca, &viewer), httpsClient(t, ca, nil)
	records := func(topic string) string { return "/v1/console/records?partition=0&from=start&topic=" + topic }
	for _, c := range []struct {
		who     string
		client  *http.Client
		token   string
		path    string
		status  int
		mention string
	}{
		{"bob", bob, "", records("visible"), http.StatusOK, "secret of visible"},
		{"bob", bob, "", records("hidden"), http.StatusForbidden, `User:bob may not READ the TOPIC "hidden"`},
		{"nobody", none, "", records("visible"), http.StatusUnauthorized, "needs"},
		{"the token", none, token, records("hidden"), http.StatusOK, "secret of hidden"},
		{"nobody", none, "", "/console/browse.html", http.StatusOK, "browse.js"},
	} {
		if status, body := httpsDo(t, c.client, a, http.MethodGet, c.path, c.token); status != c.status || !strings.Contains(body, c.mention) {
			t.Errorf("%s GET %s: %d %.200q, want %d mentioning %q", c.who, c.path, status, body, c.status, c.mention)
		}
	}
}
