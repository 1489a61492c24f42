package deploycheck

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// adapterRule is one rule of prometheus-adapter's configuration
// (docs/config.md of kubernetes-sigs/prometheus-adapter): the series it
// discovers, how their labels name Kubernetes objects, the metric name it
// serves them as, and the query that reads them.
type adapterRule struct {
	SeriesQuery string `yaml:"seriesQuery"`
	Resources   struct {
		Overrides map[string]struct {
			Resource string `yaml:"resource"`
		} `yaml:"overrides"`
		Template string `yaml:"template"`
	} `yaml:"resources"`
	Name struct {
		Matches string `yaml:"matches"`
		As      string `yaml:"as"`
	} `yaml:"name"`
	MetricsQuery string `yaml:"metricsQuery"`
}

// readAdapterRules returns the custom rules of the chart values in
// deploy/monitoring/prometheus-adapter.yaml.
func readAdapterRules(t *testing.T, root string) []adapterRule {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, monitoringDir, "prometheus-adapter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		Rules struct {
			Custom []adapterRule `yaml:"custom"`
		} `yaml:"rules"`
	}
	if err := yaml.Unmarshal(b, &values); err != nil {
		t.Fatalf("prometheus-adapter.yaml: %v", err)
	}
	if len(values.Rules.Custom) == 0 {
		t.Fatal("prometheus-adapter.yaml: no rules.custom")
	}
	return values.Rules.Custom
}

// servedName is the metric name the adapter serves series as, by its
// rules: matches is a regular expression (default .*) on the series
// name, and as expands it (by default $0, or $1 when it has one group;
// with more the adapter refuses the rule).
func (r adapterRule) servedName(series string) (string, error) {
	matches := r.Name.Matches
	if matches == "" {
		matches = ".*"
	}
	re, err := regexp.Compile(matches)
	if err != nil {
		return "", fmt.Errorf("name.matches %q: %v", matches, err)
	}
	loc := re.FindStringSubmatchIndex(series)
	if loc == nil {
		return "", fmt.Errorf("name.matches %q does not match the series %s", matches, series)
	}
	as := r.Name.As
	switch {
	case as != "":
	case re.NumSubexp() == 0:
		as = "$0"
	case re.NumSubexp() == 1:
		as = "$1"
	default:
		return "", fmt.Errorf("name.matches %q has several groups: the adapter wants name.as", matches)
	}
	return string(re.ExpandString(nil, as, series, loc)), nil
}

// checkAutoscaler: every Pods metric the HorizontalPodAutoscaler scales on
// is served by a rule of prometheus-adapter.yaml; each rule discovers a
// series the agents export, with labels they or prometheus.yml give it,
// ties it to pods and namespaces through labels that exist, and queries
// it with an expression that reads only what exists. fams holds the
// labels Prometheus adds (addLabels).
func checkAutoscaler(t *testing.T, root string, fams families, job string) {
	t.Helper()
	hpa := manifestAutoscaler(t, root)
	rules := readAdapterRules(t, root)
	served := map[string]bool{}
	for i, r := range rules {
		where := fmt.Sprintf("prometheus-adapter.yaml rule %d", i)
		use, err := parseExpr(r.SeriesQuery)
		if err != nil || len(use.selectors) != 1 {
			t.Errorf("%s: seriesQuery %q: want one selector (%v)", where, r.SeriesQuery, err)
			continue
		}
		sel := use.selectors[0]
		for _, problem := range checkQuery(r.SeriesQuery, fams, nil, job) {
			t.Errorf("%s: seriesQuery: %s", where, problem)
		}
		labels, ok := fams.lookup(sel.metric)
		if !ok {
			continue // reported by checkQuery
		}
		// A pods metric needs the pod and its namespace.
		resources := map[string]bool{}
		for label, o := range r.Resources.Overrides {
			resources[o.Resource] = true
			if !labels[label] {
				t.Errorf("%s: resources.overrides label %s: the series %s has no such label (prometheus.yml adds %v)", where, label, sel.metric, slices.Sorted(maps.Keys(labels)))
			}
		}
		if r.Resources.Template != "" || !resources["pod"] || !resources["namespace"] {
			t.Errorf("%s: resources: want overrides naming the pod and namespace resources, got %+v", where, r.Resources)
		}
		name, err := r.servedName(sel.metric)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		served[name] = true
		// The query as the adapter runs it for the pods of one namespace.
		q := strings.NewReplacer(
			"<<.Series>>", sel.metric,
			"<<.LabelMatchers>>", `namespace="strata",pod=~"strata-0|strata-1"`,
			"<<.GroupBy>>", "pod",
		).Replace(r.MetricsQuery)
		if strings.Contains(q, "<<") || strings.TrimSpace(q) == "" {
			t.Errorf("%s: metricsQuery %q: want an expression of <<.Series>>, <<.LabelMatchers>> and <<.GroupBy>> only", where, r.MetricsQuery)
			continue
		}
		for _, problem := range checkQuery(q, fams, nil, job) {
			t.Errorf("%s: metricsQuery: %s", where, problem)
		}
	}
	pods := 0
	for _, m := range hpa.Spec.Metrics {
		switch {
		case m.Type == "Resource":
			// TestKubernetesManifests checks the container requests it.
		case m.Type == "Pods" && m.Pods != nil:
			pods++
			if !served[m.Pods.Metric.Name] {
				t.Errorf("the autoscaler scales on pods metric %s; no rule of prometheus-adapter.yaml serves it (served: %v)", m.Pods.Metric.Name, slices.Sorted(maps.Keys(served)))
			}
			if m.Pods.Target.Type != "AverageValue" || m.Pods.Target.AverageValue == "" {
				t.Errorf("pods metric %s: target %+v; want type AverageValue with an averageValue", m.Pods.Metric.Name, m.Pods.Target)
			}
		default:
			t.Errorf("autoscaler metric type %q: this test knows Resource and Pods; teach it the new one", m.Type)
		}
	}
	if pods == 0 {
		t.Error("the autoscaler scales on no metric of the agents' own, only on resources")
	}
}

func TestAdapterServedName(t *testing.T) {
	rule := func(matches, as string) adapterRule {
		var r adapterRule
		r.Name.Matches, r.Name.As = matches, as
		return r
	}
	for _, tc := range []struct {
		rule   adapterRule
		series string
		want   string // "" for an error
	}{
		{rule("", ""), "strata_x", "strata_x"},
		{rule("^strata_x$", "strata_x"), "strata_x", "strata_x"},
		{rule("^strata_(.*)$", ""), "strata_x", "x"}, // one group: $1
		{rule("^(strata)_(.*)$", ""), "strata_x", ""},
		{rule("^(strata)_(.*)$", "$2"), "strata_x", "x"},
		{rule("^(.*)_total$", "${1}_per_second"), "a_total", "a_per_second"},
		{rule("^strata_y$", ""), "strata_x", ""},
		{rule("(", ""), "strata_x", ""},
	} {
		got, err := tc.rule.servedName(tc.series)
		if (err != nil) != (tc.want == "") || got != tc.want {
			t.Errorf("matches %q as %q on %s: %q, %v; want %q", tc.rule.Name.Matches, tc.rule.Name.As, tc.series, got, err, tc.want)
		}
	}
}
