package report

import (
	"strings"
	"testing"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// TestDisklessTable: classic beside diskless, each cell a median over the
// runs and their range, the ratio of the medians; the store's side from
// the diskless runs' store_writes, with the cost model's PUTs at the
// defaults (4 a second while records arrive, one per 8 MiB above 32 MiB/s);
// the classic runs' PUTs; the sentence on S3; the pair out of the plots.
func TestDisklessTable(t *testing.T) {
	if got := DisklessTable(&Results{}); !strings.Contains(got, "not measured") {
		t.Errorf("table without runs: %q", got)
	}
	writes := func(seconds float64, bytes, puts, objects int64, p50, p99 float64) *loadgen.StoreWrites {
		return &loadgen.StoreWrites{Seconds: seconds, Puts: puts, Objects: objects, ObjectBytes: bytes + bytes/100, Bytes: bytes,
			PutsPerSec: float64(puts) / seconds, PutsPerGiB: float64(puts) / (float64(bytes) / (1 << 30)),
			CommitP50Ms: p50, CommitP99Ms: p99}
	}
	run := func(system, scenario string, rate int, rps, p99 float64, w *loadgen.StoreWrites) loadgen.Result {
		r := result(system, scenario, rate, rps, p99, 1)
		r.Settings.Partitions, r.Settings.Producers = 8, 4
		if rate > 0 {
			r.Settings.Partitions, r.Settings.Producers = 1, 1
		}
		r.StoreWrites = w
		return r
	}
	const closedBytes = 400 << 20 // 80 MiB/s over 5 s: 10 PUTs/s by size, 128 per GiB
	const pacedBytes = 5000 * 1024 * 5
	classic, diskless := loadgen.SystemStrataClassic, loadgen.SystemStrataDiskless
	in := lines(t,
		run(classic, ScenarioDisklessThroughput, 0, 200000, 100, writes(5, closedBytes, 0, 0, 0, 0)),
		run(diskless, ScenarioDisklessThroughput, 0, 100000, 300, writes(5, closedBytes, 55, 55, 100, 150)),
		run(diskless, ScenarioDisklessThroughput, 0, 120000, 300, writes(5, closedBytes, 50, 50, 110, 160)),
		run(classic, ScenarioDisklessThroughput, 0, 250000, 100, writes(5, closedBytes, 0, 0, 0, 0)),
		run(classic, ScenarioDisklessThroughput, 0, 150000, 100, writes(5, closedBytes, 0, 0, 0, 0)),
		run(diskless, ScenarioDisklessThroughput, 0, 80000, 300, writes(5, closedBytes, 60, 60, 120, 170)),
		run(classic, ScenarioDisklessPaced, 5000, 5000, 2, writes(5, pacedBytes, 0, 0, 0, 0)),
		run(diskless, ScenarioDisklessPaced, 5000, 5000, 500, writes(5, pacedBytes, 20, 20, 8, 20)),
		result("strata", ScenarioPaced5k, 5000, 5000, 2, 1),
	)
	r, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	table := DisklessTable(r)
	for _, w := range []string{
		"| classic | diskless | diskless ÷ classic |",
		"| **records/s**, closed loop (`diskless-produce-p8-x4`) | 200,000 (150,000–250,000) | 100,000 (80,000–120,000) | 0.500× |",
		"| produce p50 (ms), at 5,000 records/s (`diskless-paced-5000`) | 1.00 | 250 | 250× |",
		"| **produce p99 (ms)**, at 5,000 records/s | 2.00 | 500 | 250× |",
		"| produce p99.9 (ms), at 5,000 records/s | 4.00 | 1,000 | 250× |",
		"| **end-to-end p99 (ms)**, at 5,000 records/s | 3.00 | 750 | 250× |",
		"|  | `diskless-produce-p8-x4` | `diskless-paced-5000` |",
		"| diskless: MiB/s of records in the timed phase | 80.0 | 4.88 |",
		"| diskless: store PUTs/s, measured | 11.0 (10.0–12.0) | 4.00 |",
		"| diskless: PUTs/s, cost model | 10.0 | 4.00 |",
		"| **diskless: PUTs per GiB**, measured | 141 (128–154) | 839 |",
		"| diskless: PUTs per GiB, cost model | 128 | 839 |",
		"| diskless: commit p99 (ms) | 160 (150–170) | 20.0 |",
		"| classic, same agent: store PUTs/s | 0 | 0 |",
		"strata-classic runs 3 (load 1.00–1.00, errors 0); strata-diskless runs 3",
		"8 partition(s); 4 producer(s)",
		"S3 adds its own PUT latency (tens of ms per PUT",
	} {
		if !strings.Contains(table, w) {
			t.Errorf("table lacks %q:\n%s", w, table)
		}
	}
	for _, s := range append(ThroughputScenarios(r), PacedScenarios(r)...) {
		if isDiskless(s) {
			t.Errorf("%s is in a plot", s.Name)
		}
	}
	if len(PacedScenarios(r)) != 1 {
		t.Errorf("paced-5000 left the plots with the pair")
	}
}

// TestModelPutsPerSec: the cost model at the defaults: one object per
// 250 ms until the records fill 8 MiB in less.
func TestModelPutsPerSec(t *testing.T) {
	for _, tt := range []struct{ mibPerSec, want float64 }{{0, 4}, {1, 4}, {32, 4}, {64, 8}, {800, 100}} {
		if got := modelPutsPerSec(tt.mibPerSec * (1 << 20)); got != tt.want {
			t.Errorf("%v MiB/s: %v PUTs/s, want %v", tt.mibPerSec, got, tt.want)
		}
	}
}
