package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

func result(system, scenario string, rate int, rps, p99 float64, load float64) loadgen.Result {
	r := loadgen.Result{System: system, Scenario: scenario, Mode: loadgen.ModeProduce, RecordsPerSec: rps,
		MBPerSec: rps * 1024 / 1e6, Records: int64(rps), Bytes: int64(rps) * 1024, Seconds: 1,
		Settings: loadgen.Settings{Rate: rate, RecordBytes: 1024, Partitions: 1, Producers: 1, Replication: 1, Acks: "all"},
		Produce:  loadgen.Latency{Count: 10, P50: p99 / 2, P99: p99, P999: p99 * 2, Max: p99 * 3},
		Machine:  loadgen.Machine{Load1: load}, Start: "2026-12-03T16:00:00Z"}
	if rate > 0 {
		r.Mode = loadgen.ModeEndToEnd
		r.EndToEnd = &loadgen.Latency{Count: 10, P50: p99, P99: p99 * 1.5, P999: p99 * 3, Max: p99 * 4}
	}
	return r
}

func lines(t *testing.T, rs ...loadgen.Result) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("not a result line\n")
	for _, r := range rs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestTargets: medians, ranges and every kind of target row from a
// hand-made set of results.
func TestTargets(t *testing.T) {
	puts := int64(6)
	cost := result("strata", ScenarioStoreCost, 0, 1000, 1, 1)
	cost.Bytes, cost.StorePuts = 3<<29, &puts // 1.5 GiB
	disk := result(loadgen.SystemMachine, LimitFdatasync20KiB, 0, 1000, 0.8, 1)
	disk.Mode = loadgen.ModeLimit
	in := lines(t,
		result("strata", ScenarioProduceAcksAll, 0, 100, 1, 1),
		result("kfake", ScenarioProduceAcksAll, 0, 200, 1, 2),
		result("strata", ScenarioProduceAcksAll, 0, 120, 1, 3),
		result("kfake", ScenarioProduceAcksAll, 0, 80, 1, 4),
		result("strata", ScenarioProduceAcksAll, 0, 140, 1, 5),
		result("kfake", ScenarioProduceAcksAll, 0, 100, 1, 6),
		result("jetstream", ScenarioProduceAcksAll, 0, 30, 1, 6),
		result("strata", ScenarioPaced20k, 20000, 20000, 2, 1),
		result("kfake", ScenarioPaced20k, 20000, 20000, 4, 1),
		result("strata-cluster", ScenarioRF3, 0, 40, 1, 1),
		cost,
		disk,
	)
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Scenario(ScenarioProduceAcksAll)
	if s == nil || len(s.Systems) != 3 || s.Systems[0].System != "strata" {
		t.Fatalf("scenario %+v", s)
	}
	us := s.System("strata")
	if us.Median.RecordsPerSec != 120 || us.MinRate != 100 || us.MaxRate != 140 || us.MinLoad != 1 || us.MaxLoad != 5 {
		t.Errorf("strata summary: median %v, range %v–%v, load %v–%v", us.Median.RecordsPerSec, us.MinRate, us.MaxRate, us.MinLoad, us.MaxLoad)
	}
	want := map[string]string{
		Targets[0].What:              "1.20× missed",   // 120 / 100, below 1.5
		Targets[1].What:              "4.00× met",      // 120 / 30
		Targets[2].What:              "not measured —", // no jetstream-sync
		Targets[3].What:              "2.50× met",      // p99 2 ms / the disk's 0.8 ms
		Targets[5].What:              "3.00 ms met",
		Targets[8].What:              "0.333× missed", // 40 / 120
		Targets[9].What:              "not measured —",
		Targets[len(Targets)-1].What: "4.00 met", // 6 PUTs / 1.5 GiB
	}
	if !strings.Contains(Targets[3].What, "fdatasync") {
		t.Fatalf("Targets[3] is %q, not the paced p99 against the disk", Targets[3].What)
	}
	for _, row := range Evaluate(r) {
		if w, ok := want[row.What]; ok && row.Measured+" "+row.Verdict != w {
			t.Errorf("%s: %s %s, want %s", row.What, row.Measured, row.Verdict, w)
		}
	}
	table := ScenarioTable(s)
	for _, w := range []string{"| strata | 3 | 120 | 100–140 | −17 / +17% |", "kfake 1.20×", "jetstream 4.00×"} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}
	if paced := ScenarioTable(r.Scenario(ScenarioPaced20k)); !strings.Contains(paced, "peer ÷ Strata") || !strings.Contains(paced, "kfake 2.00×") {
		t.Errorf("paced table:\n%s", paced)
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.1234: "0.123", 2.5: "2.50", 12.34: "12.3", 123.4: "123", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// TestSmoke is the CI smoke of the whole harness: one tiny paced run on
// each kind of target (a Strata agent, kfake and JetStream processes),
// the machine's limits, then the report generator on the output into a
// temporary directory. It checks that the pieces fit, never the speed.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the strata agent and the peers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var out strings.Builder
	enc := json.NewEncoder(&out)
	limits, err := loadgen.Limits(ctx, dir, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range limits {
		enc.Encode(l)
	}
	cfg := loadgen.DefaultConfig()
	cfg.Scenario, cfg.Mode, cfg.Rate, cfg.Duration = ScenarioPaced20k, loadgen.ModeEndToEnd, 200, 500*time.Millisecond
	for _, system := range []string{"strata", loadgen.SystemKfake, loadgen.SystemJetStream} {
		var target loadgen.Target
		if system == "strata" {
			target, err = loadgen.StartStrata(ctx, loadgen.StrataOptions{Dir: filepath.Join(dir, "strata")})
		} else {
			target, err = loadgen.StartPeer(ctx, system, loadgen.PeerOptions{BinDir: dir, DataDir: dir})
		}
		if err != nil {
			t.Fatal(err)
		}
		res, err := loadgen.Run(ctx, target, cfg)
		if cerr := target.Close(); cerr != nil {
			t.Error(cerr)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Summary())
		enc.Encode(res)
	}
	r, err := Read(strings.NewReader(out.String()))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join(dir, "README.tmpl.md")
	if err := os.WriteFile(tmpl, []byte("{{.Command}}\n{{.Machine}}\n{{.Targets}}\n{{.Limits}}\n{{.Scenarios}}\n{{.ThroughputPNG}} {{.LatencyPNG}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	if err := Write(r, Options{Template: tmpl, Out: readme, Command: "go test"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"### " + ScenarioPaced20k, "| strata | 1 |", "| kfake | 1 |", "| jetstream | 1 |", "disk-seq-fsync-1MiB", "latency.png"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("README lacks %q:\n%s", w, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "latency.png")); err != nil {
		t.Error(err)
	}
}

// TestConnectionsNote: a scenario with idle connections says so, is
// compared with the same workload without them, and stays out of the
// latency curves.
func TestConnectionsNote(t *testing.T) {
	held := func(system string, rps, p99 float64) loadgen.Result {
		r := result(system, "connections-1000", 5000, rps, p99, 1)
		r.Settings.Connections, r.Settings.ConnectionInterval, r.IdleRequests = 1000, "3s", 1700
		return r
	}
	in := lines(t,
		result("strata", "paced-5000", 5000, 5000, 2, 1),
		result("kfake", "paced-5000", 5000, 5000, 4, 1),
		held("strata", 4990, 3),
		held("kfake", 5000, 4),
		result("strata", "paced-20000", 20000, 20000, 5, 1),
	)
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	s := r.Scenario("connections-1000")
	if s == nil {
		t.Fatal("no connections-1000 scenario")
	}
	if d := describe(s); !strings.Contains(d, "1,000 idle connections") || !strings.Contains(d, "every 3s") {
		t.Errorf("description lacks the connections: %s", d)
	}
	note := ConnectionsNote(r, s)
	for _, w := range []string{"`paced-5000`", "| strata | 5,000 → 4,990 | 2.00 → 3.00 (1.50×) | 3.00 → 4.50 (1.50×) | 1,700 |", "| kfake | 5,000 → 5,000 | 4.00 → 4.00 (1.00×) |"} {
		if !strings.Contains(note, w) {
			t.Errorf("note lacks %q:\n%s", w, note)
		}
	}
	if n := ConnectionsNote(r, r.Scenario("paced-5000")); n != "" {
		t.Errorf("note on a scenario without connections: %q", n)
	}
	for _, p := range PacedScenarios(r) {
		if p == s {
			t.Error("connections-1000 is on the latency curve")
		}
	}
	alone, err := Read(strings.NewReader(lines(t, held("strata", 4990, 3))))
	if err != nil {
		t.Fatal(err)
	}
	if n := ConnectionsNote(alone, alone.Scenarios[0]); !strings.Contains(n, "No scenario") {
		t.Errorf("note without a baseline: %q", n)
	}
}

// TestStoreReadsLine: a catch-up from the store says what it read.
func TestStoreReadsLine(t *testing.T) {
	cold := result("strata", "catchup-minio-cold", 0, 1000, 1, 1)
	cold.Mode, cold.StoreRead = loadgen.ModeCatchUpStore, &loadgen.StoreRead{Gets: 60, Bytes: 200e6, CacheHits: 150, CacheMisses: 50}
	store, err := Read(strings.NewReader(lines(t, cold)))
	if err != nil {
		t.Fatal(err)
	}
	if table := ScenarioTable(store.Scenarios[0]); !strings.Contains(table, "strata 60 GETs, 200 MB, chunk cache 150 hits / 50 misses") {
		t.Errorf("catch-up table lacks the store reads:\n%s", table)
	}
}

// TestSecurityTable: the two listeners' medians side by side with their
// ratio, throughput from the closed-loop scenario and p99 from the paced
// one; the pair stays out of the plots.
func TestSecurityTable(t *testing.T) {
	if got := SecurityTable(&Results{}); !strings.Contains(got, "not measured") {
		t.Errorf("table without runs: %q", got)
	}
	in := lines(t,
		result(loadgen.SystemStrataPlaintext, ScenarioSecurityThroughput, 0, 200000, 1, 1),
		result(loadgen.SystemStrataSASLSSL, ScenarioSecurityThroughput, 0, 150000, 1, 2),
		result(loadgen.SystemStrataPlaintext, ScenarioSecurityThroughput, 0, 100000, 1, 3),
		result(loadgen.SystemStrataSASLSSL, ScenarioSecurityThroughput, 0, 90000, 1, 4),
		result(loadgen.SystemStrataPlaintext, ScenarioSecurityThroughput, 0, 300000, 1, 5),
		result(loadgen.SystemStrataSASLSSL, ScenarioSecurityThroughput, 0, 160000, 1, 6),
		result(loadgen.SystemStrataPlaintext, ScenarioSecurityPaced, 20000, 20000, 2, 1),
		result(loadgen.SystemStrataSASLSSL, ScenarioSecurityPaced, 20000, 20000, 3, 1),
		result("strata", ScenarioPaced20k, 20000, 20000, 2, 1),
	)
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	table := SecurityTable(r)
	for _, w := range []string{
		"| records/s, closed loop (`security-produce-acks-all`) | 200,000 | 150,000 | 0.750× |", // medians 200k, 150k
		"| produce p99 (ms), at 20,000 records/s (`security-paced-20000`) | 2.00 | 3.00 | 1.50× |",
		"| end-to-end p99 (ms), at 20,000 records/s | 3.00 | 4.50 | 1.50× |",
		"strata-plaintext runs 3 (load 1.00–5.00, errors 0); strata-sasl-ssl runs 3",
	} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}
	for _, s := range append(ThroughputScenarios(r), PacedScenarios(r)...) {
		if isSecurity(s) {
			t.Errorf("%s is in a plot", s.Name)
		}
	}
}

// TestCommandLines: the commands recorded among the results are quoted,
// in order, each on its own line of the template's code block, with the
// caller's only if it is not one of them.
func TestCommandLines(t *testing.T) {
	in := `{"command":"RUNS=3 DURATION=5s benchmarks/run.sh","start":"2026-12-03T20:01:13Z"}` + "\n" +
		lines(t, result("strata", ScenarioProduceAcksAll, 0, 100, 1, 1)) +
		`{"command":"SCENARIOS=security RUNS=3 DURATION=5s benchmarks/run.sh","start":"2026-12-04T10:00:00Z"}` + "\n" +
		lines(t, result(loadgen.SystemStrataSASLSSL, ScenarioSecurityThroughput, 0, 90, 1, 1))
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Scenarios) != 2 {
		t.Fatalf("%d scenarios, want 2: the command lines are not results", len(r.Scenarios))
	}
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "README.tmpl.md")
	if err := os.WriteFile(tmpl, []byte("    {{.Command}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "README.md")
	if err := Write(r, Options{Template: tmpl, Out: out, Command: "RUNS=3 DURATION=5s benchmarks/run.sh"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "    RUNS=3 DURATION=5s benchmarks/run.sh\n    SCENARIOS=security RUNS=3 DURATION=5s benchmarks/run.sh\n"; string(b) != want {
		t.Errorf("README quotes\n%s\nwant\n%s", b, want)
	}
}
