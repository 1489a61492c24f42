package report

import (
	"fmt"
	"strings"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// ScenarioCompactionPaced is issue 22's row: a keyed workload on a
// compacted topic at paced-20000's rate, on strata-bench's
// strata-compaction target, whose systems are one agent with the log
// cleaner (strata-cleaner) and one without (strata-no-cleaner).
const ScenarioCompactionPaced = "compaction-paced-20000"

// isCompaction says whether s is the compaction pair: it has a table of
// its own and stays out of the plots, where its two agents would read as
// two more systems and its rate would fold paced-20000's point back.
func isCompaction(s *Scenario) bool { return s.Name == ScenarioCompactionPaced }

// CompactionTable sets the agent with the cleaner beside the one without
// on the same workload: produce latency (median over the runs, then the
// range), the ratio of the medians, and what the cleaner did: its speed
// (segment bytes read per second of cleaning) and its passes.
func CompactionTable(r *Results) string {
	s := r.Scenario(ScenarioCompactionPaced)
	if s == nil {
		return "(not measured in these results)\n"
	}
	on, off := s.System(loadgen.SystemStrataCleaner), s.System(loadgen.SystemStrataNoCleaner)
	var b strings.Builder
	writeHeader(&b, []column{{"", left}, {"cleaner on", right}, {"cleaner off", right}, {"on ÷ off", right}})
	// row compares one measure; a ratio only where both agents have one
	// and it means something (latency, throughput).
	row := func(label string, get func(loadgen.Result) (float64, bool), format func(float64) string, withRatio bool) {
		c0, v0, ok0 := medianCell(on, get, format)
		c1, v1, ok1 := medianCell(off, get, format)
		ratioCell := "—"
		if withRatio && ok0 && ok1 && v1 > 0 {
			ratioCell = num(v0/v1) + "×"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", label, c0, c1, ratioCell)
	}
	always := func(get func(loadgen.Result) float64) func(loadgen.Result) (float64, bool) {
		return func(m loadgen.Result) (float64, bool) { return get(m), true }
	}
	cleaner := func(get func(loadgen.CleanerWork) float64) func(loadgen.Result) (float64, bool) {
		return func(m loadgen.Result) (float64, bool) {
			if m.Cleaner == nil {
				return 0, false
			}
			return get(*m.Cleaner), true
		}
	}
	row("records/s", always(func(m loadgen.Result) float64 { return m.RecordsPerSec }), num, true)
	row("produce p50 (ms)", always(func(m loadgen.Result) float64 { return m.Produce.P50 }), num, true)
	row("**produce p99 (ms)**", always(func(m loadgen.Result) float64 { return m.Produce.P99 }), num, true)
	row("produce p99.9 (ms)", always(func(m loadgen.Result) float64 { return m.Produce.P999 }), num, true)
	if s.Mode == loadgen.ModeEndToEnd {
		row("end-to-end p99 (ms)", func(m loadgen.Result) (float64, bool) {
			if m.EndToEnd == nil {
				return 0, false
			}
			return m.EndToEnd.P99, true
		}, num, true)
	}
	// A run in which no pass ended has no speed to show.
	row("**cleaner MB/s** (segment bytes read per second of cleaning)", func(m loadgen.Result) (float64, bool) {
		if m.Cleaner == nil || m.Cleaner.Seconds <= 0 {
			return 0, false
		}
		return m.Cleaner.ReadMBPerSec, true
	}, num, false)
	row("cleaner passes per run", cleaner(func(w loadgen.CleanerWork) float64 { return float64(w.Passes) }),
		func(v float64) string { return count(int64(v)) }, false)
	row("cleaner busy (s per run)", cleaner(func(w loadgen.CleanerWork) float64 { return w.Seconds }), num, false)
	row("cleaner MB read per run", cleaner(func(w loadgen.CleanerWork) float64 { return float64(w.ReadBytes) / 1e6 }), num, false)
	row("cleaner MB written per run", cleaner(func(w loadgen.CleanerWork) float64 { return float64(w.WrittenBytes) / 1e6 }), num, false)
	var parts []string
	for _, sum := range s.Systems {
		parts = append(parts, fmt.Sprintf("%s runs %d (load %s, errors %d)", sum.System, len(sum.Runs),
			rng(sum.MinLoad, sum.MaxLoad), sum.Median.Errors))
	}
	fmt.Fprintf(&b, "\n`%s`: %s Each cell is the median over the runs, then the range; the ratio is of the medians. %s\n",
		s.Name, describe(s), strings.Join(parts, "; ")+".")
	return b.String()
}
