package deploycheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A small reader of PromQL, enough to find which metrics and labels an
// expression uses; it does not check the grammar (Prometheus does). It
// knows identifiers, strings, numbers and durations, selectors with label
// matchers, range brackets, and the clauses that list label names.

// selector is one metric an expression reads, with its label matchers.
type selector struct {
	metric   string
	matchers map[string]string // label -> the matched value
}

// exprUse is what one expression reads: metrics, and label names used in
// by/without/on/ignoring/group_left/group_right clauses.
type exprUse struct {
	selectors []selector
	grouping  []string
}

type tokenKind int

const (
	tokIdent tokenKind = iota
	tokString
	tokNumber
	tokPunct // ( ) { } [ ] ,
	tokOp    // runs of = ! ~ < > + - * / % ^ @
)

type token struct {
	kind tokenKind
	text string
}

func tokenize(expr string) ([]token, error) {
	var out []token
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // a comment runs to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			out = append(out, token{tokString, expr[i+1 : j]})
			i = j + 1
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(expr) && (isIdent(expr[j]) || expr[j] == '.') {
				j++
			}
			out = append(out, token{tokNumber, expr[i:j]})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			out = append(out, token{tokIdent, expr[i:j]})
			i = j
		case strings.IndexByte("(){}[],", c) >= 0:
			out = append(out, token{tokPunct, string(c)})
			i++
		case strings.IndexByte("=!~<>+-*/%^@", c) >= 0:
			j := i
			for j < len(expr) && strings.IndexByte("=!~<>+-*/%^@", expr[j]) >= 0 {
				j++
			}
			out = append(out, token{tokOp, expr[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at %d", c, i)
		}
	}
	return out, nil
}

// groupingWords take a parenthesised list of label names.
var groupingWords = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// keywords are identifiers that are neither metrics nor functions.
var keywords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan"}

// parseExpr returns the metrics and label names expr uses.
func parseExpr(expr string) (exprUse, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return exprUse{}, err
	}
	var use exprUse
	for i := 0; i < len(toks); i++ {
		tk := toks[i]
		next := func(k int) token {
			if i+k < len(toks) {
				return toks[i+k]
			}
			return token{}
		}
		switch {
		case tk.kind == tokPunct && tk.text == "[":
			// A range or subquery: durations only.
			for i < len(toks) && toks[i].text != "]" {
				i++
			}
		case tk.kind == tokPunct && tk.text == "{":
			// Matchers with no metric name before them.
			sel := selector{matchers: map[string]string{}}
			end, err := readMatchers(toks, i, sel.matchers)
			if err != nil {
				return exprUse{}, err
			}
			sel.metric = sel.matchers["__name__"]
			if sel.metric == "" {
				return exprUse{}, fmt.Errorf("a selector without a metric name")
			}
			use.selectors = append(use.selectors, sel)
			i = end
		case tk.kind != tokIdent:
		case slices.Contains(groupingWords, tk.text):
			if n := next(1); n.kind == tokPunct && n.text == "(" {
				j := i + 2
				for ; j < len(toks) && toks[j].text != ")"; j++ {
					if toks[j].kind == tokIdent {
						use.grouping = append(use.grouping, toks[j].text)
					}
				}
				i = j
			}
		case slices.Contains(keywords, strings.ToLower(tk.text)):
		case next(1).kind == tokPunct && next(1).text == "(",
			next(1).kind == tokIdent && (next(1).text == "by" || next(1).text == "without"):
			// A function, or an aggregation (sum by (x) (...)).
		default:
			sel := selector{metric: tk.text, matchers: map[string]string{}}
			if n := next(1); n.kind == tokPunct && n.text == "{" {
				end, err := readMatchers(toks, i+1, sel.matchers)
				if err != nil {
					return exprUse{}, err
				}
				i = end
			}
			use.selectors = append(use.selectors, sel)
		}
	}
	return use, nil
}

// readMatchers reads `{ name op "value", ... }` starting at toks[open] and
// returns the index of the closing brace.
func readMatchers(toks []token, open int, into map[string]string) (int, error) {
	i := open + 1
	for i < len(toks) && toks[i].text != "}" {
		if toks[i].text == "," {
			i++
			continue
		}
		if i+2 >= len(toks) || toks[i].kind != tokIdent || toks[i+1].kind != tokOp || toks[i+2].kind != tokString {
			return 0, fmt.Errorf("label matcher near %q: want name op \"value\"", toks[i].text)
		}
		into[toks[i].text] = toks[i+2].text
		i += 3
	}
	if i >= len(toks) {
		return 0, fmt.Errorf("unclosed {")
	}
	return i, nil
}

func TestParseExpr(t *testing.T) {
	for _, tc := range []struct {
		expr     string
		metrics  []string
		matchers []string // label=value
		grouping []string
	}{
		{expr: `up{job="strata"} == 0`, metrics: []string{"up"}, matchers: []string{"job=strata"}},
		{expr: `max(strata_leaderless_partitions) > 0`, metrics: []string{"strata_leaderless_partitions"}},
		{
			expr:     `sum by (instance) (rate(strata_store_requests_total{outcome="error"}[5m])) / sum by (instance) (rate(strata_store_requests_total[5m])) > 0.05`,
			metrics:  []string{"strata_store_requests_total", "strata_store_requests_total"},
			matchers: []string{"outcome=error"},
			grouping: []string{"instance", "instance"},
		},
		{
			expr:     "max by (topic, partition) (a)\n  - on (topic, partition) group_right\nmax by (group, topic, partition) (b)",
			metrics:  []string{"a", "b"},
			grouping: []string{"topic", "partition", "topic", "partition", "group", "topic", "partition"},
		},
		{
			expr:     `histogram_quantile(0.99, sum(rate(x_bucket{api!="Fetch", le=~".+"}[5m:1m])) by (le, api))`,
			metrics:  []string{"x_bucket"},
			matchers: []string{"api=Fetch", "le=.+"},
			grouping: []string{"le", "api"},
		},
		{expr: `{__name__="y", a="1"} offset 5m and bool z`, metrics: []string{"y", "z"}, matchers: []string{"__name__=y", "a=1"}},
		{expr: `sum(x) without (instance) > 20 * 1024 * 1e3`, metrics: []string{"x"}, grouping: []string{"instance"}},
		{expr: `strata:group_lag_records > 100`, metrics: []string{"strata:group_lag_records"}},
	} {
		use, err := parseExpr(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		var metrics, matchers []string
		for _, s := range use.selectors {
			metrics = append(metrics, s.metric)
			for k, v := range s.matchers {
				matchers = append(matchers, k+"="+v)
			}
		}
		slices.Sort(matchers)
		slices.Sort(tc.matchers)
		if !slices.Equal(metrics, tc.metrics) || !slices.Equal(matchers, tc.matchers) || !slices.Equal(use.grouping, tc.grouping) {
			t.Errorf("%s:\n got metrics %q matchers %q grouping %q\nwant metrics %q matchers %q grouping %q",
				tc.expr, metrics, matchers, use.grouping, tc.metrics, tc.matchers, tc.grouping)
		}
	}
	for _, bad := range []string{`x{a="1"`, `x{a=1}`, `"open`, `$var`} {
		if _, err := parseExpr(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
