package report

import (
	"fmt"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// Scenario names that benchmarks/run.sh gives its runs and the targets
// below read.
const (
	ScenarioProduceAcksAll = "produce-acks-all"       // closed loop, 1 partition, 1 producer
	ScenarioPaced5k        = "paced-5000"             // e2e at 5,000 records/s, linger 0
	ScenarioPaced20k       = "paced-20000"            // e2e at 20,000 records/s, linger 0
	ScenarioConnections    = "connections-1000"       // paced-5000 with 1,000 idle connections
	ScenarioCompaction     = "compaction-paced-20000" // keyed, compacted, cleaner on against off
	ScenarioCatchUpLocal   = "catchup-local"          // read a filled partition from offset 0
	ScenarioCatchUpCold    = "catchup-minio-cold"     // the same from MinIO, first read
	ScenarioCatchUpWarm    = "catchup-minio-warm"     // the same from MinIO, second read
	ScenarioRF3            = "rf3-acks-all"           // produce-acks-all on three agents, RF=3
	ScenarioPartitions     = "partitions-1000"        // one producer over 1,000 partitions
	ScenarioTxn            = "txn-produce"            // committing every 100 records
	ScenarioStoreCost      = "store-cost"             // over 1 GiB in, uploads settled

	// ScenarioLimits names the machine's limits in a target; each limit
	// is a system of it.
	ScenarioLimits      = "limits"
	LimitFdatasync20KiB = "limit/disk-fdatasync-20KiB"
)

// Target is one of the performance issues' goals, with how to read its
// measured value from the results.
type Target struct {
	What string // what is compared
	Want string // the goal, as written in the issue
	// measure returns the value and whether the runs it needs exist.
	measure func(*Results) (float64, bool)
	met     func(float64) bool
	unit    string // "x" for ratios, "ms", ...
}

// Targets are issue 33's goals for 1 KiB records (issue 7's, raised).
var Targets = []Target{
	rateRatio("Produce, one agent, acks=all (fsync before ack): Strata ÷ kfake records/s", ScenarioProduceAcksAll, "strata", ScenarioProduceAcksAll, loadgen.SystemKfake, 1.5),
	rateRatio("Same: Strata ÷ JetStream (defaults)", ScenarioProduceAcksAll, "strata", ScenarioProduceAcksAll, loadgen.SystemJetStream, 4),
	rateRatio("Same: Strata ÷ JetStream (sync_interval: always)", ScenarioProduceAcksAll, "strata", ScenarioProduceAcksAll, loadgen.SystemJetStreamSync, 100),
	latencyRatio("Paced 20k records/s, linger 0, acks=all: produce p99 ÷ the p99 of a bare 20 KiB write+fdatasync", ScenarioPaced20k, "strata", ScenarioLimits, LimitFdatasync20KiB, produceP99, 3),
	latencyAtMost("Same: produce p99.9", ScenarioPaced20k, "strata", 6, func(r loadgen.Result) *float64 { return &r.Produce.P999 }),
	latencyAtMost("Same: end-to-end p99", ScenarioPaced20k, "strata", 4, func(r loadgen.Result) *float64 {
		if r.EndToEnd == nil {
			return nil
		}
		return &r.EndToEnd.P99
	}),
	latencyRatio("Same workload, keyed and compacted: produce p99 with the log cleaner ÷ without", ScenarioCompaction, "strata-cleaner", ScenarioCompaction, "strata-no-cleaner", produceP99, 1.2),
	latencyRatio("Paced 5k records/s: produce p99 with 1,000 idle connections ÷ without", ScenarioConnections, "strata", ScenarioPaced5k, "strata", produceP99, 1.2),
	rateRatio("Three agents RF=3 acks=all ÷ one agent, records/s", ScenarioRF3, "strata-cluster", ScenarioProduceAcksAll, "strata", 0.8),
	rateRatio("1,000 partitions, one producer: Strata ÷ kfake records/s", ScenarioPartitions, "strata", ScenarioPartitions, loadgen.SystemKfake, 0.8),
	rateRatio("Transactions, commit every 100 records: Strata ÷ kfake records/s", ScenarioTxn, "strata", ScenarioTxn, loadgen.SystemKfake, 0.8),
	rateRatio("Catch-up read from local disk: Strata ÷ kfake records/s", ScenarioCatchUpLocal, "strata", ScenarioCatchUpLocal, loadgen.SystemKfake, 1.2),
	rateRatio("Catch-up from MinIO (cold) ÷ Strata's local catch-up", ScenarioCatchUpCold, "strata", ScenarioCatchUpLocal, "strata", 0.8),
	rateRatio("Catch-up from MinIO (warm) ÷ Strata's local catch-up", ScenarioCatchUpWarm, "strata", ScenarioCatchUpLocal, "strata", 1.0),
	{
		What: "Object store PUTs per GiB ingested, default settings", Want: "≤ 16", unit: "",
		measure: func(r *Results) (float64, bool) {
			s := r.Scenario(ScenarioStoreCost)
			if s == nil || s.System("strata") == nil {
				return 0, false
			}
			m := s.System("strata").Median
			if m.StorePuts == nil || m.Bytes == 0 {
				return 0, false
			}
			return float64(*m.StorePuts) / (float64(m.Bytes) / (1 << 30)), true
		},
		met: func(v float64) bool { return v <= 16 },
	},
}

func produceP99(r loadgen.Result) *float64 { return &r.Produce.P99 }

// latencyRatio: the median of a latency quantile of system a in scenario
// sa over that of b in sb, at most want.
func latencyRatio(what, sa, a, sb, b string, get func(loadgen.Result) *float64, want float64) Target {
	return Target{What: what, Want: fmt.Sprintf("≤ %g×", want), unit: "×",
		measure: func(r *Results) (float64, bool) {
			x, y := median(r, sa, a), median(r, sb, b)
			if x == nil || y == nil {
				return 0, false
			}
			vx, vy := get(*x), get(*y)
			if vx == nil || vy == nil || *vy == 0 {
				return 0, false
			}
			return *vx / *vy, true
		},
		met: func(v float64) bool { return v <= want },
	}
}

// rateRatio: median records/s of system a in scenario sa over that of b
// in sb, at least want.
func rateRatio(what, sa, a, sb, b string, want float64) Target {
	return Target{What: what, Want: fmt.Sprintf("≥ %g×", want), unit: "×",
		measure: func(r *Results) (float64, bool) {
			x, y := median(r, sa, a), median(r, sb, b)
			if x == nil || y == nil || y.RecordsPerSec == 0 {
				return 0, false
			}
			return x.RecordsPerSec / y.RecordsPerSec, true
		},
		met: func(v float64) bool { return v >= want },
	}
}

// latencyAtMost: the median over the runs of a latency quantile, at most
// want milliseconds.
func latencyAtMost(what, scenario, system string, want float64, get func(loadgen.Result) *float64) Target {
	return Target{What: what, Want: fmt.Sprintf("≤ %g ms", want), unit: " ms",
		measure: func(r *Results) (float64, bool) {
			m := median(r, scenario, system)
			if m == nil {
				return 0, false
			}
			v := get(*m)
			if v == nil {
				return 0, false
			}
			return *v, true
		},
		met: func(v float64) bool { return v <= want },
	}
}

func median(r *Results, scenario, system string) *loadgen.Result {
	s := r.Scenario(scenario)
	if scenario == ScenarioLimits {
		s = r.Limits
	}
	if s == nil {
		return nil
	}
	sum := s.System(system)
	if sum == nil {
		return nil
	}
	return &sum.Median
}

// TargetRow is a target with its verdict.
type TargetRow struct {
	What, Want, Measured, Verdict string
}

// Evaluate reads every target from r.
func Evaluate(r *Results) []TargetRow {
	var rows []TargetRow
	for _, t := range Targets {
		row := TargetRow{What: t.What, Want: t.Want, Measured: "not measured", Verdict: "—"}
		if v, ok := t.measure(r); ok {
			row.Measured = fmt.Sprintf("%s%s", num(v), t.unit)
			row.Verdict = "missed"
			if t.met(v) {
				row.Verdict = "met"
			}
		}
		rows = append(rows, row)
	}
	return rows
}
