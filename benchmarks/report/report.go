// Package report turns the JSON result lines of strata-bench runs into
// benchmarks/README.md: one table per scenario with every system side by
// side (median and range over the runs, the machine's load during them),
// Strata's ratio to each peer, the issue-7 targets with what was measured
// against each, SASL_SSL against plaintext on one agent (issue 20), an
// agent with the log cleaner against one without (issue 22), classic
// topics against diskless ones on one agent, with the diskless runs'
// store PUTs (issue 34), the machine's limits, and PNG plots (throughput bars, latency against
// throughput from the paced runs).
//
// Input is what strata-bench prints on stdout, one loadgen.Result per
// line, and the command lines benchmarks/run.sh writes before each
// invocation's results (CommandLine); other lines are skipped. Runs group by scenario name and system;
// benchmarks/run.sh names the scenarios, and Targets refers to them by
// those names.
package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"slices"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// Summary is one system's runs of one scenario.
type Summary struct {
	System string
	Runs   []loadgen.Result
	// Median holds each number's own median over Runs (loadgen.Median).
	Median loadgen.Result
	// MinRate and MaxRate are the range of records/s over Runs; MinLoad
	// and MaxLoad that of the 1-minute load average at each run's start.
	MinRate, MaxRate float64
	MinLoad, MaxLoad float64
}

// Scenario is every system's runs of one workload.
type Scenario struct {
	Name     string
	Mode     loadgen.Mode
	Settings loadgen.Settings
	Systems  []*Summary // in systemOrder
}

// System returns the summary of the named system, or nil.
func (s *Scenario) System(name string) *Summary {
	for _, sum := range s.Systems {
		if sum.System == name {
			return sum
		}
	}
	return nil
}

// Results are the runs read from strata-bench output, grouped.
type Results struct {
	Scenarios []*Scenario // in the order each first appears
	Limits    *Scenario   // the machine's limits (System "machine"), or nil
	// Commands are the command lines recorded among the results, in
	// order (CommandLine).
	Commands []string
}

// CommandLine is the line benchmarks/run.sh writes before an invocation's
// results: what was run, so that a README drawn from results appended by
// several invocations quotes each.
type CommandLine struct {
	Command string `json:"command"`
	Start   string `json:"start"`
}

// Scenario returns the named scenario, or nil.
func (r *Results) Scenario(name string) *Scenario {
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Read parses result lines and command lines from each reader; lines that
// are neither a JSON object with a system and a scenario nor one with a
// command are skipped.
func Read(rs ...io.Reader) (*Results, error) {
	var all []loadgen.Result
	var commands []string
	for _, r := range rs {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var cmd CommandLine
			if json.Unmarshal(sc.Bytes(), &cmd) == nil && cmd.Command != "" {
				commands = append(commands, cmd.Command)
				continue
			}
			var res loadgen.Result
			if json.Unmarshal(sc.Bytes(), &res) != nil || res.System == "" || res.Scenario == "" {
				continue
			}
			all = append(all, res)
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	out := group(all)
	out.Commands = commands
	return out, nil
}

// systemOrder is the column order: Strata first, then the peers from the
// fastest expected to the slowest.
var systemOrder = []string{"strata", "strata-cluster", loadgen.SystemStrataPlaintext, loadgen.SystemStrataSASLSSL,
	loadgen.SystemStrataCleaner, loadgen.SystemStrataNoCleaner, loadgen.SystemStrataClassic, loadgen.SystemStrataDiskless, loadgen.SystemKfake, "kfake-inproc",
	loadgen.SystemJetStream, loadgen.SystemJetStreamSync, loadgen.SystemMachine}

func systemRank(name string) int {
	if i := slices.Index(systemOrder, name); i >= 0 {
		return i
	}
	return len(systemOrder)
}

func group(all []loadgen.Result) *Results {
	out := &Results{}
	byName := map[string]*Scenario{}
	for _, res := range all {
		s, ok := byName[res.Scenario]
		if !ok {
			s = &Scenario{Name: res.Scenario, Mode: res.Mode, Settings: res.Settings}
			byName[res.Scenario] = s
			if res.Mode == loadgen.ModeLimit {
				out.Limits = s
			} else {
				out.Scenarios = append(out.Scenarios, s)
			}
		}
		sum := s.System(res.System)
		if sum == nil {
			sum = &Summary{System: res.System}
			s.Systems = append(s.Systems, sum)
		}
		sum.Runs = append(sum.Runs, res)
	}
	// The limits are three scenarios in the output; here one, with a
	// "system" per limit, so they make one table.
	if out.Limits != nil {
		limits := &Scenario{Name: "limits", Mode: loadgen.ModeLimit}
		for _, res := range all {
			if res.Mode != loadgen.ModeLimit {
				continue
			}
			sum := limits.System(res.Scenario)
			if sum == nil {
				sum = &Summary{System: res.Scenario}
				limits.Systems = append(limits.Systems, sum)
			}
			sum.Runs = append(sum.Runs, res)
		}
		out.Limits = limits
		finish(limits)
	}
	for _, s := range out.Scenarios {
		finish(s)
		slices.SortStableFunc(s.Systems, func(a, b *Summary) int {
			return cmp.Compare(systemRank(a.System), systemRank(b.System))
		})
	}
	return out
}

func finish(s *Scenario) {
	for _, sum := range s.Systems {
		sum.Median = loadgen.Median(sum.Runs)
		sum.MinRate, sum.MaxRate = sum.Runs[0].RecordsPerSec, sum.Runs[0].RecordsPerSec
		sum.MinLoad, sum.MaxLoad = sum.Runs[0].Machine.Load1, sum.Runs[0].Machine.Load1
		for _, r := range sum.Runs[1:] {
			sum.MinRate, sum.MaxRate = min(sum.MinRate, r.RecordsPerSec), max(sum.MaxRate, r.RecordsPerSec)
			sum.MinLoad, sum.MaxLoad = min(sum.MinLoad, r.Machine.Load1), max(sum.MaxLoad, r.Machine.Load1)
		}
	}
}
