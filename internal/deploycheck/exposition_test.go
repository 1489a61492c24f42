package deploycheck

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/metricstext"
)

// family is one metric family of a Prometheus text exposition: its type
// and the label names its samples carry.
type family struct {
	typ    string
	labels map[string]bool
}

// families maps family names to what the agents exported.
type families map[string]*family

// scrape reads http://addr/metrics into fams.
func (fams families) scrape(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metricstext.Scrape(ctx, "http://"+addr+"/metrics")
	if err != nil {
		return err
	}
	fams.add(m)
	return nil
}

// parse reads the text exposition format into fams.
func (fams families) parse(r io.Reader) error {
	m, err := metricstext.Parse(r)
	if err != nil {
		return err
	}
	fams.add(m)
	return nil
}

// add merges a scrape's families and label names into fams. A
// histogram's le and a summary's quantile are not labels of the family
// (the parser keeps them apart); lookup adds le to _bucket series.
func (fams families) add(m metricstext.Families) {
	for name, mf := range m {
		f, ok := fams[name]
		if !ok {
			f = &family{labels: map[string]bool{}}
			fams[name] = f
		}
		f.typ = strings.ToLower(mf.GetType().String())
		for _, metric := range mf.GetMetric() {
			for _, l := range metric.GetLabel() {
				f.labels[l.GetName()] = true
			}
		}
	}
}

// addLabels gives every family the labels Prometheus adds to each series
// it scrapes (the scrape job's target labels).
func (fams families) addLabels(labels []string) {
	for _, f := range fams {
		for _, l := range labels {
			f.labels[l] = true
		}
	}
}

// lookup returns the label names a selector of metric may use: its
// family's, "le" on a histogram's _bucket series, and the labels
// Prometheus adds to every target (job, instance). Histogram and summary
// families are read through their suffixed series only.
func (fams families) lookup(metric string) (map[string]bool, bool) {
	with := func(f *family, extra ...string) map[string]bool {
		out := map[string]bool{"job": true, "instance": true, "__name__": true}
		for l := range f.labels {
			out[l] = true
		}
		for _, l := range extra {
			out[l] = true
		}
		return out
	}
	if f, ok := fams[metric]; ok && f.typ != "histogram" && f.typ != "summary" {
		return with(f), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(metric, suffix)
		if !ok {
			continue
		}
		f, ok := fams[base]
		switch {
		case ok && f.typ == "histogram" && suffix == "_bucket":
			return with(f, "le"), true
		case ok && (f.typ == "histogram" || f.typ == "summary") && suffix != "_bucket":
			return with(f), true
		}
	}
	return nil, false
}

func TestExpositionParse(t *testing.T) {
	const text = `# HELP a_seconds Latency.
# TYPE a_seconds histogram
a_seconds_bucket{api="Fetch",le="0.1"} 1
a_seconds_sum{api="Fetch"} 0.05
a_seconds_count{api="Fetch"} 1
# TYPE b_total counter
b_total{op="get",outcome="ok"} 3
b_total{op="put",outcome="error",note="a \"quoted\" } value"} 1
# TYPE c gauge
c 7
`
	fams := families{}
	if err := fams.parse(strings.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		metric string
		labels []string
		ok     bool
	}{
		{"a_seconds_bucket", []string{"api", "le"}, true},
		{"a_seconds_count", []string{"api"}, true},
		{"a_seconds", nil, false},
		{"b_total", []string{"op", "outcome", "note"}, true},
		{"c", nil, true},
		{"d", nil, false},
	} {
		labels, ok := fams.lookup(tc.metric)
		if ok != tc.ok {
			t.Errorf("%s: found %v, want %v", tc.metric, ok, tc.ok)
			continue
		}
		for _, l := range tc.labels {
			if !labels[l] {
				t.Errorf("%s: no label %s in %v", tc.metric, l, labels)
			}
		}
		if ok && labels["le"] && tc.metric != "a_seconds_bucket" {
			t.Errorf("%s has le", tc.metric)
		}
	}
}
