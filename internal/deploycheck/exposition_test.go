package deploycheck

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
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
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return fams.parse(resp.Body)
}

// parse reads the text exposition format: "# TYPE name type" lines, and
// samples `name{label="value",...} value [timestamp]`.
func (fams families) parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			fams.get(name).typ = typ
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end <= 0 {
			return fmt.Errorf("sample line %q", line)
		}
		f := fams.get(fams.familyOf(line[:end]))
		if line[end] != '{' {
			continue
		}
		labels, err := labelNames(line[end:])
		if err != nil {
			return fmt.Errorf("%q: %v", line, err)
		}
		for _, l := range labels {
			// A histogram's le and a summary's quantile belong to
			// _bucket series and quantile samples only; lookup adds le.
			if l == "le" && f.typ == "histogram" || l == "quantile" && f.typ == "summary" {
				continue
			}
			f.labels[l] = true
		}
	}
	return sc.Err()
}

func (fams families) get(name string) *family {
	f, ok := fams[name]
	if !ok {
		f = &family{labels: map[string]bool{}}
		fams[name] = f
	}
	return f
}

// familyOf maps a sample name to its family: histograms and summaries
// write name_bucket, name_sum and name_count under the TYPE of name.
func (fams families) familyOf(sample string) string {
	if _, ok := fams[sample]; ok {
		return sample
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(sample, suffix); ok {
			if f, ok := fams[base]; ok && (f.typ == "histogram" || f.typ == "summary") {
				return base
			}
		}
	}
	return sample
}

// labelNames returns the names in `{a="x",b="y\"z"}`.
func labelNames(s string) ([]string, error) {
	var names []string
	i := 1
	for i < len(s) && s[i] != '}' {
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return nil, fmt.Errorf("label at %d", i)
		}
		names = append(names, strings.TrimSpace(s[i:i+eq]))
		j := i + eq + 2
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(s) {
			return nil, fmt.Errorf("unterminated value at %d", i)
		}
		i = j + 1
		if i < len(s) && s[i] == ',' {
			i++
		}
	}
	if i >= len(s) {
		return nil, fmt.Errorf("no closing brace")
	}
	return names, nil
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
