package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/dataplane"
)

func TestParseBrowseQuery(t *testing.T) {
	cfg := DefaultBrowseConfig()
	for _, c := range []struct {
		query string
		want  string // the parsed query's fields, or the parameter a 400 names
	}{
		{"topic=t", "t -1 end 50 read_uncommitted auto 4096 <nil>"},
		{"topic=t&partition=2&from=offset:10&limit=5&isolation=read_committed&decode=json&key=k1&max_value_bytes=100",
			"t 2 offset:10 5 read_committed json 100 k1"},
		{"topic=t&partition=all&from=timestamp:1700000000000", "t -1 timestamp:1700000000000 50 read_uncommitted auto 4096 <nil>"},
		{"topic=t&partition=0&from=before:7", "t 0 before:7 50 read_uncommitted auto 4096 <nil>"},
		{"topic=t&from=start&partition=all", "t -1 start 50 read_uncommitted auto 4096 <nil>"},
		{"", "topic"},
		{"topic=t&partition=-1", "partition"},
		{"topic=t&partition=x", "partition"},
		{"topic=t&from=offset:7", "from"}, // all partitions: no offsets
		{"topic=t&partition=0&from=offset:", "from"},
		{"topic=t&partition=0&from=offset:-3", "from"},
		{"topic=t&from=start:3", "from"},
		{"topic=t&from=middle", "from"},
		{"topic=t&limit=0", "limit"},
		{"topic=t&limit=501", "limit"},
		{"topic=t&max_value_bytes=65537", "max_value_bytes"},
		{"topic=t&isolation=serializable", "isolation"},
		{"topic=t&decode=base64", "decode"},
		{"topic=t&key=" + strings.Repeat("k", browseKeyMaxBytes+1), "key"},
	} {
		v, _ := url.ParseQuery(c.query)
		q, err := parseBrowseQuery(v, cfg)
		var got string
		if bp := (*badParam)(nil); errors.As(err, &bp) {
			got = bp.name
		} else if err != nil {
			got = err.Error()
		} else {
			key := "<nil>"
			if q.key != nil {
				key = string(q.key)
			}
			got = strings.Join([]string{q.topic, strconv.Itoa(int(q.partition)), q.from(), strconv.Itoa(q.limit), q.isolation(), string(q.decode), strconv.Itoa(q.valueMax), key}, " ")
		}
		if got != c.want {
			t.Errorf("%q: %s, want %s", c.query, got, c.want)
		}
	}
}

// TestRecordsErrors: a bad parameter is a 400 and an unknown topic or
// partition a 404, each a JSON object whose error names what is wrong,
// before any Kafka client is made.
func TestRecordsErrors(t *testing.T) {
	s, err := New(Config{}, fakeHost{topics: []*dataplane.Topic{{Name: "orders", PartitionCount: 2}}}, quiet, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s.SetDeps(Deps{ID: 1, StartedAt: time.Now()})
	h := s.routes()
	for _, c := range []struct {
		query   string
		status  int
		mention string
	}{
		{"", http.StatusBadRequest, "topic: required"},
		{"topic=orders&partition=0&from=sideways", http.StatusBadRequest, "from:"},
		{"topic=orders&limit=100000", http.StatusBadRequest, "limit:"},
		{"topic=nope", http.StatusNotFound, `topic "nope" not found`},
		{"topic=orders&partition=2", http.StatusNotFound, `topic "orders" has no partition 2`},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/console/records?"+c.query, nil))
		var body struct{ Error string }
		err := json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != c.status || err != nil || !strings.Contains(body.Error, c.mention) || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%q: %d %s (%v), want %d with an error naming %q", c.query, w.Code, w.Body, err, c.status, c.mention)
		}
	}
}

// TestRecordsRestrictedWithACLs: with --authorizer acl and a token file,
// the records need the token although --http-require-auth-for does not
// name them; the console's other reads stay open.
func TestRecordsRestrictedWithACLs(t *testing.T) {
	const token = "cmVjb3Jkcy10ZXN0LXRva2VuLWZvci10aGUtZ3VhcmQ"
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		acls   bool
		path   string
		bearer string
		want   int // 0: passes
	}{
		{true, "/v1/console/records?topic=t", "", http.StatusUnauthorized},
		{true, "/v1/console/records?topic=t", token, 0},
		{true, "/v1/console", "", 0},
		{false, "/v1/console/records?topic=t", "", 0},
	} {
		s := newTestServer(t, Config{ACLs: c.acls, TokenFile: file}, prometheus.NewRegistry())
		r := httptest.NewRequest("GET", c.path, nil)
		if c.bearer != "" {
			r.Header.Set("Authorization", "Bearer "+c.bearer)
		}
		got := 0
		if e := s.newHTTPGuard().check(r); e != nil {
			got = e.status
		}
		if got != c.want {
			t.Errorf("ACLs %v, %s, token %v: %d, want %d", c.acls, c.path, c.bearer != "", got, c.want)
		}
	}
}
