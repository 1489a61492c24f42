package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// num formats v with about three significant digits, and thousands
// separators above 1,000.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		s := fmt.Sprintf("%.0f", v)
		var b strings.Builder
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		for i, c := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(c)
		}
		if neg {
			return "-" + b.String()
		}
		return b.String()
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a == 0:
		return "0"
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func rng(lo, hi float64) string { return num(lo) + "–" + num(hi) }

// medianCell is the median of get over those of sum's runs that have the
// measure, then their range if they differ, each formatted by format;
// with the median, and whether any run had it ("—" when none did, or sum
// is nil). The median is the lower middle value, as loadgen.Median takes
// it.
func medianCell(sum *Summary, get func(loadgen.Result) (float64, bool), format func(float64) string) (string, float64, bool) {
	if sum == nil {
		return "—", 0, false
	}
	var vs []float64
	for _, run := range sum.Runs {
		if v, ok := get(run); ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "—", 0, false
	}
	slices.Sort(vs)
	med, lo, hi := vs[(len(vs)-1)/2], vs[0], vs[len(vs)-1]
	if lo == hi {
		return format(med), med, true
	}
	return fmt.Sprintf("%s (%s–%s)", format(med), format(lo), format(hi)), med, true
}

// spread is how far the runs' values lie from their median, in percent
// below and above it: the run-to-run spread a target's "every run within
// ±20% of the median" reads.
func spread(runs []loadgen.Result, median float64, get func(loadgen.Result) float64) string {
	if median == 0 || len(runs) < 2 {
		return "—"
	}
	lo, hi := 0.0, 0.0
	for _, r := range runs {
		d := (get(r) - median) / median * 100
		lo, hi = min(lo, d), max(hi, d)
	}
	return fmt.Sprintf("−%.0f / +%.0f%%", math.Abs(lo), hi)
}

// count formats a count: whole, with thousands separators.
func count(n int64) string {
	if n >= 1000 || n <= -1000 {
		return num(float64(n))
	}
	return strconv.FormatInt(n, 10)
}

// describe says what a scenario's workload is.
func describe(s *Scenario) string {
	st := s.Settings
	loop := "closed loop"
	if st.Rate > 0 {
		loop = fmt.Sprintf("open loop at %s records/s", num(float64(st.Rate)))
	}
	what := map[loadgen.Mode]string{
		loadgen.ModeProduce:      "produce",
		loadgen.ModeEndToEnd:     "produce with a tail consumer (end-to-end latency)",
		loadgen.ModeCatchUp:      "fill, then time a new consumer reading from offset 0",
		loadgen.ModeCatchUpStore: "fill a topic of 4 MiB segments with local.retention.bytes 0, wait until every sealed segment is in MinIO and off the agent's disk, then time a new consumer reading from offset 0",
	}[s.Mode]
	length := st.Duration
	if st.Records > 0 {
		length = num(float64(st.Records)) + " records"
	}
	idle := ""
	if st.Connections > 0 {
		idle = fmt.Sprintf("; %s idle connections held besides the producer(s) and consumer, each sending a request every %s (Kafka: Metadata; JetStream: PING)",
			num(float64(st.Connections)), st.ConnectionInterval)
	}
	keys := ""
	if st.Keys > 0 {
		keys = fmt.Sprintf("; each record one of %s keys, in turn", num(float64(st.Keys)))
	}
	if st.Compact {
		keys += "; the topic compacted (cleanup.policy=compact, 4 MiB segments)"
	}
	return fmt.Sprintf("%s; %s; acks=%s; %d B records%s; %d partition(s); %d producer(s); replication factor %d; linger %g ms%s; %s per run.",
		what, loop, st.Acks, st.RecordBytes, keys, st.Partitions, st.Producers, st.Replication, st.LingerMs, idle, length)
}

// column is a markdown table column: its title and its alignment cell.
type column struct {
	title, align string
}

// Alignment cells of a markdown table.
const (
	left  = "---"
	right = "---:"
)

// writeHeader writes a markdown table's header row and alignment row.
func writeHeader(b *strings.Builder, cols []column) {
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" " + c.title + " |")
	}
	b.WriteString("\n|")
	for _, c := range cols {
		b.WriteString(c.align + "|")
	}
	b.WriteString("\n")
}

// ScenarioTable is the markdown section of one scenario.
func ScenarioTable(s *Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#### %s\n\n%s\n\n", s.Name, describe(s))
	e2e := s.Mode == loadgen.ModeEndToEnd
	paced := s.Settings.Rate > 0 && s.Mode != loadgen.ModeCatchUp
	spreadTitle := "spread of records/s"
	if paced {
		spreadTitle = "spread of produce p99"
	}
	cols := []column{{"system", left}, {"runs", right}, {"records/s (median)", right}, {"range", left},
		{spreadTitle, left}, {"MB/s", right}, {"produce p50 / p99 / p99.9 (ms)", left}}
	if e2e {
		cols = append(cols, column{"end-to-end p50 / p99 / p99.9 (ms)", left})
	}
	writeHeader(&b, append(cols, column{"load (1 min)", left}, column{"errors", right}))
	for _, sum := range s.Systems {
		m := sum.Median
		get := func(r loadgen.Result) float64 { return r.RecordsPerSec }
		if paced {
			get = func(r loadgen.Result) float64 { return r.Produce.P99 }
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s / %s / %s |", sum.System, len(sum.Runs), num(m.RecordsPerSec),
			rng(sum.MinRate, sum.MaxRate), spread(sum.Runs, get(m), get), num(m.MBPerSec), num(m.Produce.P50), num(m.Produce.P99), num(m.Produce.P999))
		if e2e {
			if m.EndToEnd != nil {
				fmt.Fprintf(&b, " %s / %s / %s |", num(m.EndToEnd.P50), num(m.EndToEnd.P99), num(m.EndToEnd.P999))
			} else {
				b.WriteString(" — |")
			}
		}
		fmt.Fprintf(&b, " %s | %d |\n", rng(sum.MinLoad, sum.MaxLoad), m.Errors)
	}
	if r := ratios(s); r != "" {
		b.WriteString("\n" + r + "\n")
	}
	if r := storeReads(s); r != "" {
		b.WriteString("\n" + r + "\n")
	}
	return b.String()
}

// storeReads says what each system's timed read took from the store, in
// catchup-store scenarios.
func storeReads(s *Scenario) string {
	var parts []string
	for _, sum := range s.Systems {
		if sr := sum.Median.StoreRead; sr != nil {
			parts = append(parts, fmt.Sprintf("%s %s GETs, %s MB, chunk cache %s hits / %s misses", sum.System,
				count(sr.Gets), num(float64(sr.Bytes)/1e6), count(sr.CacheHits), count(sr.CacheMisses)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Read from the store during the timed read (medians; the agent's counters): " + strings.Join(parts, "; ") + "."
}

// baseline is the scenario whose workload is s's without the idle
// connections, or nil.
func baseline(r *Results, s *Scenario) *Scenario {
	want := s.Settings
	want.Connections, want.ConnectionInterval = 0, ""
	for _, b := range r.Scenarios {
		if b != s && b.Mode == s.Mode && b.Settings == want {
			return b
		}
	}
	return nil
}

// ConnectionsNote compares a scenario with idle connections with the same
// workload without them (for example connections-1000 with paced-5000),
// system by system: what holding the connections cost. It is empty for
// other scenarios, and says so when no run without them was made.
func ConnectionsNote(r *Results, s *Scenario) string {
	if s.Settings.Connections == 0 {
		return ""
	}
	base := baseline(r, s)
	if base == nil {
		return "\nNo scenario of these results runs the same workload without the idle connections, to compare with.\n"
	}
	e2e := s.Mode == loadgen.ModeEndToEnd
	var b strings.Builder
	fmt.Fprintf(&b, "\nWith the %s idle connections against without them (`%s`, the same workload), medians:\n\n",
		num(float64(s.Settings.Connections)), base.Name)
	cols := []column{{"system", left}, {"records/s without → with", left}, {"produce p99 (ms) without → with", left}}
	if e2e {
		cols = append(cols, column{"end-to-end p99 (ms) without → with", left})
	}
	writeHeader(&b, append(cols, column{"idle requests answered", right}))
	for _, sum := range s.Systems {
		was := base.System(sum.System)
		if was == nil {
			continue
		}
		m, w := sum.Median, was.Median
		fmt.Fprintf(&b, "| %s | %s → %s | %s → %s (%s×) |", sum.System, num(w.RecordsPerSec), num(m.RecordsPerSec),
			num(w.Produce.P99), num(m.Produce.P99), ratio(m.Produce.P99, w.Produce.P99))
		if e2e {
			if m.EndToEnd != nil && w.EndToEnd != nil {
				fmt.Fprintf(&b, " %s → %s (%s×) |", num(w.EndToEnd.P99), num(m.EndToEnd.P99), ratio(m.EndToEnd.P99, w.EndToEnd.P99))
			} else {
				b.WriteString(" — |")
			}
		}
		fmt.Fprintf(&b, " %s |\n", count(m.IdleRequests))
	}
	return b.String()
}

// ratio is a / b, or "—" when b is 0.
func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return num(a / b)
}

// ratios compares Strata with each peer in s: records/s in closed-loop
// and catch-up runs; in paced runs, where every system is sent the same
// rate, the peer's p99 over Strata's.
func ratios(s *Scenario) string {
	us := s.System("strata")
	if us == nil {
		return ""
	}
	var parts []string
	for _, peer := range s.Systems {
		if peer == us {
			continue
		}
		if s.Settings.Rate > 0 && s.Mode != loadgen.ModeCatchUp {
			if us.Median.Produce.P99 > 0 {
				parts = append(parts, fmt.Sprintf("%s %s×", peer.System, num(peer.Median.Produce.P99/us.Median.Produce.P99)))
			}
			continue
		}
		if peer.Median.RecordsPerSec > 0 {
			parts = append(parts, fmt.Sprintf("%s %s×", peer.System, num(us.Median.RecordsPerSec/peer.Median.RecordsPerSec)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	if s.Settings.Rate > 0 && s.Mode != loadgen.ModeCatchUp {
		return "Produce p99, peer ÷ Strata (above 1: Strata's tail is shorter): " + strings.Join(parts, ", ") + "."
	}
	return "Records/s, Strata ÷ peer: " + strings.Join(parts, ", ") + "."
}

// LimitsTable is the machine's limits.
func LimitsTable(s *Scenario) string {
	if s == nil {
		return "(not measured in this run)\n"
	}
	var b strings.Builder
	b.WriteString("| limit | runs | MB/s (median) | ops/s | per op p50 / p99 / p99.9 (ms) | spread of p99 | load (1 min) |\n|---|---:|---:|---:|---|---|---|\n")
	for _, sum := range s.Systems {
		m := sum.Median
		lat := "—"
		if m.Produce.Count > 0 {
			lat = fmt.Sprintf("%s / %s / %s", num(m.Produce.P50), num(m.Produce.P99), num(m.Produce.P999))
		}
		sp := "—"
		if m.Produce.Count > 0 {
			sp = spread(sum.Runs, m.Produce.P99, func(r loadgen.Result) float64 { return r.Produce.P99 })
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s |\n", strings.TrimPrefix(sum.System, "limit/"), len(sum.Runs),
			num(m.MBPerSec), num(m.RecordsPerSec), lat, sp, rng(sum.MinLoad, sum.MaxLoad))
	}
	return b.String()
}

// TargetsTable is the targets with what was measured.
func TargetsTable(rows []TargetRow) string {
	var b strings.Builder
	b.WriteString("| target | goal | measured | |\n|---|---|---:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.What, r.Want, r.Measured, r.Verdict)
	}
	return b.String()
}
