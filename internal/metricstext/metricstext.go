// Package metricstext reads the Prometheus text exposition an agent serves
// on /metrics, for tests and benchmarks that watch a counter: one parser
// (the Prometheus library's own) instead of one written by hand per
// caller.
//
// A scrape is a set of metric families by name. Samples are looked up by
// the name they have in the text: a counter or gauge by its family's name,
// a histogram or summary by the family's name with _count, _sum or _bucket
// (le label) appended, or with no suffix for a summary's quantiles.
package metricstext

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// maxScrapeBytes bounds a scrape's body.
const maxScrapeBytes = 64 << 20

// Families is one scrape: metric families by name.
type Families map[string]*dto.MetricFamily

// Sample is one line of the exposition: its labels and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Parse reads Prometheus text exposition.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metricstext: %w", err)
	}
	return fams, nil
}

// Scrape GETs url and parses the answer, which must be 200 OK and at most
// 64 MiB.
func Scrape(ctx context.Context, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metricstext: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metricstext: GET %s: %s", url, resp.Status)
	}
	body := io.LimitReader(resp.Body, maxScrapeBytes+1)
	fams, err := Parse(body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if n, _ := io.Copy(io.Discard, body); n > 0 {
		return nil, fmt.Errorf("metricstext: GET %s: more than %d bytes", url, maxScrapeBytes)
	}
	return fams, nil
}

// Samples returns the samples named name, in the order of the exposition.
func (f Families) Samples(name string) []Sample {
	if fam, ok := f[name]; ok {
		var out []Sample
		for _, m := range fam.GetMetric() {
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, sample(m, m.GetCounter().GetValue()))
			case dto.MetricType_GAUGE:
				out = append(out, sample(m, m.GetGauge().GetValue()))
			case dto.MetricType_UNTYPED:
				out = append(out, sample(m, m.GetUntyped().GetValue()))
			case dto.MetricType_SUMMARY:
				for _, q := range m.GetSummary().GetQuantile() {
					out = append(out, sample(m, q.GetValue(), "quantile", formatFloat(q.GetQuantile())))
				}
			}
		}
		return out
	}
	for _, suffix := range []string{"_count", "_sum", "_bucket"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		fam := f[base]
		if fam == nil {
			return nil
		}
		var out []Sample
		for _, m := range fam.GetMetric() {
			switch fam.GetType() {
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				switch suffix {
				case "_count":
					out = append(out, sample(m, float64(h.GetSampleCount())))
				case "_sum":
					out = append(out, sample(m, h.GetSampleSum()))
				default:
					for _, b := range h.GetBucket() {
						out = append(out, sample(m, float64(b.GetCumulativeCount()), "le", formatFloat(b.GetUpperBound())))
					}
					// The parser keeps +Inf only if the text had it; the
					// count is the +Inf bucket either way.
					if n := len(h.GetBucket()); n == 0 || !math.IsInf(h.GetBucket()[n-1].GetUpperBound(), 1) {
						out = append(out, sample(m, float64(h.GetSampleCount()), "le", "+Inf"))
					}
				}
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				switch suffix {
				case "_count":
					out = append(out, sample(m, float64(s.GetSampleCount())))
				case "_sum":
					out = append(out, sample(m, s.GetSampleSum()))
				}
			}
		}
		return out
	}
	return nil
}

// Value is the sum of the samples named name whose labels include every
// pair in labels (key, value, key, value...); ok is false if none does.
// With every label of one series given, it is that series' value.
func (f Families) Value(name string, labels ...string) (v float64, ok bool) {
	if len(labels)%2 != 0 {
		panic(fmt.Sprintf("metricstext: Value(%q) with an odd number of label arguments", name))
	}
	for _, s := range f.Samples(name) {
		if s.Has(labels...) {
			v += s.Value
			ok = true
		}
	}
	return v, ok
}

// Series is the value of the one sample named name whose labels are
// exactly labels (key, value, ...); ok is false if there is none.
func (f Families) Series(name string, labels ...string) (v float64, ok bool) {
	for _, s := range f.Samples(name) {
		if len(s.Labels) == len(labels)/2 && s.Has(labels...) {
			return s.Value, true
		}
	}
	return 0, false
}

// Has reports whether s has every pair in labels (key, value, ...).
func (s Sample) Has(labels ...string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		if v, ok := s.Labels[labels[i]]; !ok || v != labels[i+1] {
			return false
		}
	}
	return true
}

// String writes the sample as the exposition does, labels sorted by name:
// name{a="1",b="2"}; the name is not kept, so it is left out.
func (s Sample) String() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, s.Labels[k])
	}
	b.WriteString("} ")
	b.WriteString(formatFloat(s.Value))
	return b.String()
}

func sample(m *dto.Metric, v float64, extra ...string) Sample {
	labels := make(map[string]string, len(m.GetLabel())+len(extra)/2)
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	for i := 0; i+1 < len(extra); i += 2 {
		labels[extra[i]] = extra[i+1]
	}
	return Sample{Labels: labels, Value: v}
}

func formatFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
