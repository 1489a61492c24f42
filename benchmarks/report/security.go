package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// Scenario names of the SASL_SSL-against-plaintext pair (issue 20), each
// run on strata-bench's strata-security target: one agent whose PLAINTEXT
// and SASL_SSL listeners are the systems strata-plaintext and
// strata-sasl-ssl.
const (
	// ScenarioSecurityThroughput is produce-acks-all's workload.
	ScenarioSecurityThroughput = "security-produce-acks-all"
	// ScenarioSecurityPaced is paced-20000's workload.
	ScenarioSecurityPaced = "security-paced-20000"
)

// isSecurity says whether s is one of the pair: they have a table of
// their own and stay out of the plots, where the two listeners of one
// agent would read as two more systems.
func isSecurity(s *Scenario) bool {
	return slices.Contains([]string{ScenarioSecurityThroughput, ScenarioSecurityPaced}, s.Name)
}

// SecurityTable sets the SASL_SSL listener's medians beside the plaintext
// listener's, with their ratio: throughput from the closed-loop scenario,
// produce and end-to-end p99 from the paced one.
func SecurityTable(r *Results) string {
	closed, paced := r.Scenario(ScenarioSecurityThroughput), r.Scenario(ScenarioSecurityPaced)
	if closed == nil && paced == nil {
		return "(not measured in these results)\n"
	}
	var b strings.Builder
	writeHeader(&b, []column{{"", left}, {"plaintext", right}, {"SASL_SSL, SCRAM-SHA-512", right}, {"SASL_SSL ÷ plaintext", right}})
	// row writes one measure of s for both listeners; a listener without
	// runs, or without the measure, shows a dash.
	row := func(label string, s *Scenario, get func(loadgen.Result) (float64, bool)) {
		var v [2]float64
		var ok [2]bool
		cells := []string{"—", "—"}
		for i, system := range []string{loadgen.SystemStrataPlaintext, loadgen.SystemStrataSASLSSL} {
			if s == nil {
				continue
			}
			if sum := s.System(system); sum != nil {
				if v[i], ok[i] = get(sum.Median); ok[i] {
					cells[i] = num(v[i])
				}
			}
		}
		r := "—"
		if ok[0] && ok[1] && v[0] > 0 {
			r = num(v[1]/v[0]) + "×"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", label, cells[0], cells[1], r)
	}
	always := func(get func(loadgen.Result) float64) func(loadgen.Result) (float64, bool) {
		return func(m loadgen.Result) (float64, bool) { return get(m), true }
	}
	row(fmt.Sprintf("records/s, closed loop (`%s`)", ScenarioSecurityThroughput), closed,
		always(func(m loadgen.Result) float64 { return m.RecordsPerSec }))
	row("MB/s, closed loop", closed, always(func(m loadgen.Result) float64 { return m.MBPerSec }))
	rate := "paced"
	if paced != nil {
		rate = fmt.Sprintf("at %s records/s", num(float64(paced.Settings.Rate)))
	}
	row(fmt.Sprintf("produce p99 (ms), %s (`%s`)", rate, ScenarioSecurityPaced), paced,
		always(func(m loadgen.Result) float64 { return m.Produce.P99 }))
	row(fmt.Sprintf("end-to-end p99 (ms), %s", rate), paced, func(m loadgen.Result) (float64, bool) {
		if m.EndToEnd == nil {
			return 0, false
		}
		return m.EndToEnd.P99, true
	})
	// Say how many runs each median is of, and under what load.
	var notes []string
	for _, s := range []*Scenario{closed, paced} {
		if s == nil {
			continue
		}
		var parts []string
		for _, sum := range s.Systems {
			parts = append(parts, fmt.Sprintf("%s runs %d (load %s, errors %d)", sum.System, len(sum.Runs),
				rng(sum.MinLoad, sum.MaxLoad), sum.Median.Errors))
		}
		notes = append(notes, fmt.Sprintf("`%s`: %s.", s.Name, strings.Join(parts, "; ")))
	}
	fmt.Fprintf(&b, "\nMedians over the runs. %s\n", strings.Join(notes, " "))
	return b.String()
}
