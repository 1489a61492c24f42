package report

import (
	"strings"
	"testing"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// TestCompactionTable: the agent with the cleaner beside the one without,
// each cell a median over the runs and their range, the p99 ratio of the
// medians, the cleaner's speed from its own runs only; the pair stays
// out of the plots and old result lines (a "keys" boolean) still read.
func TestCompactionTable(t *testing.T) {
	if got := CompactionTable(&Results{}); !strings.Contains(got, "not measured") {
		t.Errorf("table without runs: %q", got)
	}
	run := func(system string, p99, load float64, work *loadgen.CleanerWork) loadgen.Result {
		r := result(system, ScenarioCompactionPaced, 20000, 20000, p99, load)
		r.Mode, r.EndToEnd = loadgen.ModeProduce, nil
		r.Settings.Keys, r.Settings.Compact = 10000, true
		r.Cleaner = work
		return r
	}
	work := func(passes int64, readMB, seconds float64) *loadgen.CleanerWork {
		return &loadgen.CleanerWork{Passes: passes, ReadBytes: int64(readMB * 1e6), WrittenBytes: int64(readMB * 1e5),
			Seconds: seconds, ReadMBPerSec: readMB / seconds}
	}
	old := `{"system":"strata","scenario":"paced-20000","mode":"e2e","settings":{"rate":20000,"record_bytes":1024,"keys":false,"partitions":1},"records_per_s":20000}`
	in := lines(t,
		run(loadgen.SystemStrataCleaner, 9, 1, work(4, 200, 2)), // 100 MB/s
		run(loadgen.SystemStrataNoCleaner, 6, 2, &loadgen.CleanerWork{}),
		run(loadgen.SystemStrataNoCleaner, 4, 3, &loadgen.CleanerWork{}),
		run(loadgen.SystemStrataCleaner, 12, 4, work(5, 300, 2)), // 150 MB/s
		run(loadgen.SystemStrataCleaner, 6, 5, work(1, 50, 1)),   // 50 MB/s
		run(loadgen.SystemStrataNoCleaner, 5, 6, &loadgen.CleanerWork{}),
	) + old + "\n"
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if r.Scenario("paced-20000") == nil {
		t.Error("a result line from before --keys took a count was skipped")
	}
	table := CompactionTable(r)
	for _, w := range []string{
		"| cleaner on | cleaner off | on ÷ off |",
		"| **produce p99 (ms)** | 9.00 (6.00–12.0) | 5.00 (4.00–6.00) | 1.80× |",
		"| **cleaner MB/s** (segment bytes read per second of cleaning) | 100 (50.0–150) | — | — |",
		"| cleaner passes per run | 4 (1–5) | 0 | — |",
		"strata-cleaner runs 3 (load 1.00–5.00, errors 0); strata-no-cleaner runs 3 (load 2.00–6.00, errors 0).",
		"each record one of 10,000 keys, in turn; the topic compacted",
	} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}
	for _, s := range append(ThroughputScenarios(r), PacedScenarios(r)...) {
		if isCompaction(s) {
			t.Errorf("%s is in a plot", s.Name)
		}
	}
}
