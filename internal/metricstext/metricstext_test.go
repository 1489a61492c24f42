package metricstext

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const exposition = `# HELP req_total Requests.
# TYPE req_total counter
req_total{api="Produce",outcome="ok"} 5
req_total{api="Produce",outcome="error"} 2
req_total{api="Fetch",outcome="ok"} 1.5e+06
# TYPE up gauge
up 1
# TYPE lat_seconds histogram
lat_seconds_bucket{op="put",le="0.1"} 3
lat_seconds_bucket{op="put",le="1"} 7
lat_seconds_bucket{op="put",le="+Inf"} 8
lat_seconds_sum{op="put"} 4.5
lat_seconds_count{op="put"} 8
# TYPE q summary
q{quantile="0.5"} 0.25
q_sum 10
q_count 40
plain 42
`

func TestValue(t *testing.T) {
	fams, err := Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
		ok     bool
	}{
		{"req_total", nil, 1_500_007, true},
		{"req_total", []string{"api", "Produce"}, 7, true},
		{"req_total", []string{"api", "Produce", "outcome", "ok"}, 5, true},
		{"req_total", []string{"outcome", "ok"}, 1_500_005, true},
		{"req_total", []string{"api", "Metadata"}, 0, false},
		{"req", nil, 0, false}, // a prefix of a name is another name
		{"up", nil, 1, true},
		{"lat_seconds_count", []string{"op", "put"}, 8, true},
		{"lat_seconds_sum", nil, 4.5, true},
		{"lat_seconds_bucket", []string{"le", "1"}, 7, true},
		{"lat_seconds_bucket", []string{"le", "+Inf"}, 8, true},
		{"lat_seconds", nil, 0, false},
		{"q", []string{"quantile", "0.5"}, 0.25, true},
		{"q_count", nil, 40, true},
		{"plain", nil, 42, true},
		{"absent_total", nil, 0, false},
	} {
		got, ok := fams.Value(tc.name, tc.labels...)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Value(%s, %q) = %v, %v; want %v, %v", tc.name, tc.labels, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		labels []string
		want   float64
		ok     bool
	}{
		{[]string{"api", "Produce", "outcome", "ok"}, 5, true},
		{[]string{"outcome", "ok", "api", "Fetch"}, 1.5e6, true},
		{[]string{"api", "Produce"}, 0, false}, // two series have it
	} {
		if got, ok := fams.Series("req_total", tc.labels...); got != tc.want || ok != tc.ok {
			t.Errorf("Series(req_total, %q) = %v, %v; want %v, %v", tc.labels, got, ok, tc.want, tc.ok)
		}
	}
	if got := fams.Samples("req_total")[1].String(); got != `{api="Produce",outcome="error"} 2` {
		t.Errorf("String() = %s", got)
	}
}

func TestParseRejectsBadText(t *testing.T) {
	for _, text := range []string{
		"# TYPE x counter\nx{a=\"1\" 3\n", // no closing brace
		"x 1 2 3 4\n",
		"# TYPE x counter\nx not-a-number\n",
	} {
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("Parse(%q) succeeded", text)
		}
	}
}

// TestScrape reads what client_golang serves, as every agent does.
func TestScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_test_total", Help: "h."}, []string{"topic"})
	reg.MustRegister(c)
	c.WithLabelValues("a").Add(3)
	c.WithLabelValues("b").Inc()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fams, err := Scrape(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := fams.Value("strata_test_total", "topic", "a"); v != 3 || !ok {
		t.Fatalf("topic a: %v, %v; want 3", v, ok)
	}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	if _, err := Scrape(ctx, notFound.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("scrape of a 404: %v", err)
	}
}
