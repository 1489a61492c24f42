package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// Scenario names of issue 34's diskless rows, each run on strata-bench's
// strata-diskless target: one agent on a MinIO process, whose systems
// strata-classic and strata-diskless create each run's topic classic and
// diskless.
const (
	// ScenarioDisklessThroughput is a closed loop over 8 partitions from
	// 4 producers, so that the agent's write buffer batches across them.
	ScenarioDisklessThroughput = "diskless-produce-p8-x4"
	// ScenarioDisklessPaced is paced-5000's workload, with a tail
	// consumer.
	ScenarioDisklessPaced = "diskless-paced-5000"
)

// The agent's defaults that the cost model reads: the write buffer is cut
// when its oldest batch is this old, or holds this many bytes
// (--diskless-commit-interval, --diskless-commit-bytes). The diskless
// runs use them.
const (
	disklessCommitInterval = 0.25 // seconds
	disklessCommitBytes    = 8 << 20
)

// isDiskless says whether s is one of the diskless pair's scenarios:
// they have a table of their own and stay out of the plots, where the
// agent's two topic modes would read as two more systems.
func isDiskless(s *Scenario) bool {
	return slices.Contains([]string{ScenarioDisklessThroughput, ScenarioDisklessPaced}, s.Name)
}

// modelPutsPerSec is the cost model's PUTs per second of one agent at
// the default settings, for bytesPerSec of produced records: one object
// per commit interval, or one per commit-bytes when the buffer fills
// first.
func modelPutsPerSec(bytesPerSec float64) float64 {
	return math.Max(1/disklessCommitInterval, bytesPerSec/disklessCommitBytes)
}

// DisklessTable sets classic topics beside diskless ones on the same
// agent: throughput from the closed loop, produce and end-to-end latency
// from the paced run, then what the diskless runs wrote to the store
// during their timed phase, measured and as the cost model has it. Each
// cell is the median over the runs, then their range.
func DisklessTable(r *Results) string {
	closed, paced := r.Scenario(ScenarioDisklessThroughput), r.Scenario(ScenarioDisklessPaced)
	if closed == nil && paced == nil {
		return "(not measured in these results)\n"
	}
	system := func(s *Scenario, name string) *Summary {
		if s == nil {
			return nil
		}
		return s.System(name)
	}
	always := func(get func(loadgen.Result) float64) func(loadgen.Result) (float64, bool) {
		return func(m loadgen.Result) (float64, bool) { return get(m), true }
	}
	var b strings.Builder
	writeHeader(&b, []column{{"", left}, {"classic", right}, {"diskless", right}, {"diskless ÷ classic", right}})
	// side compares one measure of s for both topic modes.
	side := func(label string, s *Scenario, get func(loadgen.Result) (float64, bool)) {
		c0, v0, ok0 := medianCell(system(s, loadgen.SystemStrataClassic), get, num)
		c1, v1, ok1 := medianCell(system(s, loadgen.SystemStrataDiskless), get, num)
		ratioCell := "—"
		if ok0 && ok1 && v0 > 0 {
			ratioCell = num(v1/v0) + "×"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", label, c0, c1, ratioCell)
	}
	side(fmt.Sprintf("**records/s**, closed loop (`%s`)", ScenarioDisklessThroughput), closed,
		always(func(m loadgen.Result) float64 { return m.RecordsPerSec }))
	side("MB/s, closed loop", closed, always(func(m loadgen.Result) float64 { return m.MBPerSec }))
	rate := "paced"
	if paced != nil {
		rate = fmt.Sprintf("at %s records/s", num(float64(paced.Settings.Rate)))
	}
	side(fmt.Sprintf("produce p50 (ms), %s (`%s`)", rate, ScenarioDisklessPaced), paced,
		always(func(m loadgen.Result) float64 { return m.Produce.P50 }))
	side(fmt.Sprintf("**produce p99 (ms)**, %s", rate), paced, always(func(m loadgen.Result) float64 { return m.Produce.P99 }))
	side(fmt.Sprintf("produce p99.9 (ms), %s", rate), paced, always(func(m loadgen.Result) float64 { return m.Produce.P999 }))
	side(fmt.Sprintf("**end-to-end p99 (ms)**, %s", rate), paced, func(m loadgen.Result) (float64, bool) {
		if m.EndToEnd == nil {
			return 0, false
		}
		return m.EndToEnd.P99, true
	})

	// The store's side: the diskless runs of each scenario, one column
	// each, and the classic runs' PUTs for comparison.
	fmt.Fprintf(&b, "\nWhat the agent wrote to the store during the timed phase (after the warm-up, to the last acknowledgement), and the cost model's expectation at the default `--diskless-commit-interval` (250 ms) and `--diskless-commit-bytes` (8 MiB): PUTs/s per agent = max(4, MiB/s ÷ 8).\n\n")
	var scenarios []*Scenario
	cols := []column{{"", left}}
	for _, s := range []*Scenario{closed, paced} {
		if s != nil {
			scenarios = append(scenarios, s)
			cols = append(cols, column{fmt.Sprintf("`%s`", s.Name), right})
		}
	}
	writeHeader(&b, cols)
	writes := func(get func(loadgen.StoreWrites) (float64, bool)) func(loadgen.Result) (float64, bool) {
		return func(m loadgen.Result) (float64, bool) {
			if m.StoreWrites == nil || m.StoreWrites.Seconds <= 0 {
				return 0, false
			}
			return get(*m.StoreWrites)
		}
	}
	perSec := func(w loadgen.StoreWrites) float64 { return float64(w.Bytes) / w.Seconds }
	store := func(label, system string, get func(loadgen.StoreWrites) (float64, bool)) {
		b.WriteString("| " + label + " |")
		for _, s := range scenarios {
			c, _, _ := medianCell(s.System(system), writes(get), num)
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	some := func(get func(loadgen.StoreWrites) float64) func(loadgen.StoreWrites) (float64, bool) {
		return func(w loadgen.StoreWrites) (float64, bool) { return get(w), true }
	}
	diskless := loadgen.SystemStrataDiskless
	store("diskless: MiB/s of records in the timed phase", diskless, some(func(w loadgen.StoreWrites) float64 { return perSec(w) / (1 << 20) }))
	store("diskless: store PUTs/s, measured", diskless, some(func(w loadgen.StoreWrites) float64 { return w.PutsPerSec }))
	store("diskless: PUTs/s, cost model", diskless, some(func(w loadgen.StoreWrites) float64 { return modelPutsPerSec(perSec(w)) }))
	store("**diskless: PUTs per GiB**, measured", diskless, func(w loadgen.StoreWrites) (float64, bool) { return w.PutsPerGiB, w.Bytes > 0 })
	store("diskless: PUTs per GiB, cost model", diskless, func(w loadgen.StoreWrites) (float64, bool) {
		return modelPutsPerSec(perSec(w)) / (perSec(w) / (1 << 30)), w.Bytes > 0
	})
	store("diskless: commit objects, mean MiB", diskless, func(w loadgen.StoreWrites) (float64, bool) {
		return float64(w.ObjectBytes) / float64(w.Objects) / (1 << 20), w.Objects > 0
	})
	store("diskless: commit p50 (ms), an object's cut to its answers", diskless,
		func(w loadgen.StoreWrites) (float64, bool) { return w.CommitP50Ms, w.Objects > 0 })
	store("diskless: commit p99 (ms)", diskless, func(w loadgen.StoreWrites) (float64, bool) { return w.CommitP99Ms, w.Objects > 0 })
	store("classic, same agent: store PUTs/s", loadgen.SystemStrataClassic, some(func(w loadgen.StoreWrites) float64 { return w.PutsPerSec }))

	var notes []string
	for _, s := range scenarios {
		var parts []string
		for _, sum := range s.Systems {
			parts = append(parts, fmt.Sprintf("%s runs %d (load %s, errors %d)", sum.System, len(sum.Runs),
				rng(sum.MinLoad, sum.MaxLoad), sum.Median.Errors))
		}
		notes = append(notes, fmt.Sprintf("`%s`: %s %s.", s.Name, describe(s), strings.Join(parts, "; ")))
	}
	fmt.Fprintf(&b, "\nEach cell is the median over the runs, then the range; the ratio is of the medians. %s\n", strings.Join(notes, " "))
	b.WriteString("\nMinIO runs on this machine and is reached over loopback, so a PUT here takes milliseconds: " +
		"S3 adds its own PUT latency (tens of ms per PUT, more at the tail) to every diskless row, " +
		"in the commit times, in produce and end-to-end latency, and in what a closed loop with a bounded window reaches. " +
		"The classic rows wait on no PUT.\n")
	return b.String()
}
