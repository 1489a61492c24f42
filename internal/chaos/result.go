package chaos

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strata-streaming/strata/tiering"
)

// Result is everything a run reports: written as result.json and
// summarised on one screen by Summary.
type Result struct {
	Seed      uint64    `json:"seed"`
	Repeat    string    `json:"repeat,omitempty"` // the command that repeats the run
	Started   time.Time `json:"started"`
	Elapsed   string    `json:"elapsed"`
	Agents    int       `json:"agents"`
	Store     string    `json:"store"`
	Topics    []string  `json:"topics"`
	Duration  string    `json:"fault_phase"`
	UnsafeAck bool      `json:"unsafe_ack,omitempty"`
	Network   bool      `json:"network_namespaces,omitempty"`
	Diskless  bool      `json:"diskless,omitempty"`

	Faults      []FaultRecord  `json:"faults"`
	FaultCounts map[string]int `json:"fault_counts"`
	Proxy       *ProxyStats    `json:"store_proxy,omitempty"`

	// FaultPhaseStart is when the fault phase began; the faults' At and
	// the produce gaps count from it.
	FaultPhaseStart time.Time `json:"fault_phase_start"`

	AckedAll       int            `json:"acked_all"`
	FailedAll      int            `json:"failed_all"`
	AckedOne       int            `json:"acked_one"`
	FailedOne      int            `json:"failed_one"`
	ProduceErrors  []string       `json:"produce_errors,omitempty"`
	ClientDataLoss []string       `json:"client_detected_data_loss,omitempty"`
	CommitErrors   map[string]int `json:"commit_errors"` // by error
	FetchErrors    int            `json:"fetch_errors"`
	ConsumeErrors  []string       `json:"consume_errors,omitempty"`
	// SkippedFull is how many records the producers did not send
	// because their client already held maxBufferedRecs unanswered.
	SkippedFull int `json:"skipped_buffer_full,omitempty"`
	// ProduceGaps are each acks=all producer's longest waits for an
	// acknowledgement during the fault phase (ProduceGaps); reported, not
	// judged.
	ProduceGaps []ProduceGap `json:"produce_gaps,omitempty"`
	// DisklessEpochs are the Metadata answers whose leader epoch for a
	// diskless partition was below one another answer gave before
	// (EpochRewinds); reported, not judged.
	DisklessEpochs *EpochReport `json:"diskless_epochs,omitempty"`

	// ProgressAfterHeal is how long after healing the producers had new
	// acknowledgements; Stalled says they had none within HealTimeout.
	ProgressAfterHeal string `json:"progress_after_heal,omitempty"`
	// HealedAfter is how long after healing every partition had a leader
	// and a full ISR on every agent; Unhealthy is what was still wrong
	// when HealTimeout passed.
	HealedAfter string `json:"healed_after,omitempty"`
	Unhealthy   string `json:"unhealthy,omitempty"`
	// EndsBehindAcks says that, after the producers stopped, ListOffsets
	// (latest) answered ends below acknowledged records, by how much, and
	// when every agent's caught up (awaitEnds); reported, not judged.
	EndsBehindAcks string `json:"ends_behind_acks,omitempty"`
	// GroupCaughtUpAfter is how long after the producers stopped the
	// group's commits reached every end offset.
	GroupCaughtUpAfter string `json:"group_caught_up_after,omitempty"`

	Verify      *tiering.Report `json:"-"`
	VerifyStats string          `json:"verify"`
	VerifyError string          `json:"verify_error,omitempty"`

	Check *Report `json:"check"`
	// AgentLogs are the paths of the agents' logs, copied into OutDir.
	AgentLogs []string `json:"agent_logs"`
	// Failures lists why the run failed; empty when it passed.
	Failures []string `json:"failures"`
	Outcome  string   `json:"outcome"`
}

// FaultRecord is one fault as injected.
type FaultRecord struct {
	At     string    `json:"at"` // since the fault phase began
	Time   time.Time `json:"time"`
	Fault  Fault     `json:"fault"`
	Agents []int     `json:"agents"` // the agents hit (none for store faults)
	What   string    `json:"what"`
}

// Failed reports whether any promise was broken.
func (r *Result) Failed() bool { return len(r.Failures) > 0 }

// finish fills Failures and Outcome from the parts.
func (r *Result) finish() {
	r.Failures = nil
	if r.Check != nil {
		for _, check := range slices.Sorted(maps.Keys(r.Check.Counts)) {
			r.Failures = append(r.Failures, fmt.Sprintf("%s: %d", check, r.Check.Counts[check]))
		}
	}
	if r.Unhealthy != "" {
		r.Failures = append(r.Failures, "not healed: "+r.Unhealthy)
	}
	if r.ProgressAfterHeal == "" {
		r.Failures = append(r.Failures, "no acks=all record acknowledged after healing")
	}
	if r.VerifyError != "" {
		r.Failures = append(r.Failures, "verify: "+r.VerifyError)
	}
	if r.Verify != nil && len(r.Verify.Problems) > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("verify: %d referenced objects missing or damaged", len(r.Verify.Problems)))
	}
	r.Outcome = "pass"
	if r.Failed() {
		r.Outcome = "FAIL"
	}
}

// write saves the result as dir/result.json.
func (r *Result) write(dir string) (string, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "result.json")
	return path, os.WriteFile(path, append(b, '\n'), 0o644)
}

// Summary is the one-screen account of the run.
func (r *Result) Summary() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("chaos: %s  seed %d  %d agents on %s  fault phase %s  elapsed %s", r.Outcome, r.Seed, r.Agents, r.Store, r.Duration, r.Elapsed)
	if r.Repeat != "" {
		p("  repeat: %s", r.Repeat)
	}
	if r.Network {
		p("  each agent in a network namespace of its own (netcut and storecut faults)")
	}
	if r.Diskless {
		p("  diskless: the acks=all topics have diskless.enable=true; no acks=1 topic")
	}
	if r.UnsafeAck {
		p("  BROKEN BUILD: agents built with -tags %s (acks=all acknowledged before replication)", UnsafeAckTag)
	}
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(r.FaultCounts)) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, r.FaultCounts[k]))
	}
	p("  faults: %d (%s)", len(r.Faults), strings.Join(kinds, ", "))
	if r.Proxy != nil {
		p("  store proxy: %d requests, %d SlowDown, %d resets before / %d after forwarding, %d delayed, %d 500s, %d PUTs cut half-way",
			r.Proxy.Requests, r.Proxy.SlowDowns, r.Proxy.ResetsBefore, r.Proxy.ResetsAfter, r.Proxy.Delayed, r.Proxy.ServerErrors, r.Proxy.HalfPuts)
	}
	p("  acks=all: %d acknowledged, %d failed; acks=1: %d acknowledged, %d failed", r.AckedAll, r.FailedAll, r.AckedOne, r.FailedOne)
	if r.SkippedFull > 0 {
		p("  %d records not sent: their producer's buffer held %d unanswered", r.SkippedFull, maxBufferedRecs)
	}
	if e := r.DisklessEpochs; e != nil {
		p("  diskless leader epochs: %d Metadata answers, %d below an epoch answered before", e.Samples, e.Rewinds)
		if e.Rewinds > 0 {
			l := e.Longest
			p("    furthest behind: agent %d said %s epoch %d at +%v, %v after agent %d said %d",
				l.Agent, l.TopicPartition, l.Epoch, l.At.Sub(r.FaultPhaseStart).Round(time.Millisecond), l.Behind.Round(time.Millisecond), l.HighestAgent, l.Highest)
		}
	}
	for _, g := range r.ProduceGaps {
		p("  longest produce gap of %s: %s", g.Producer, g.describe(r.FaultPhaseStart))
		p("    of one partition, %s: %s", g.Partition, g.PartitionGap.describe(r.FaultPhaseStart))
	}
	if len(r.CommitErrors) > 0 || r.FetchErrors > 0 {
		var errs []string
		for _, e := range slices.Sorted(maps.Keys(r.CommitErrors)) {
			errs = append(errs, fmt.Sprintf("%s ×%d", e, r.CommitErrors[e]))
		}
		p("  group: %d fetch errors; commits refused: %s", r.FetchErrors, strings.Join(errs, "; "))
	}
	if len(r.ClientDataLoss) > 0 {
		p("  the producer client itself detected data loss %d times (first: %s)", len(r.ClientDataLoss), r.ClientDataLoss[0])
	}
	if c := r.Check; c != nil {
		p("  read back: %d records in %d partitions; group: %d deliveries, %d commits, %d OffsetFetch samples", c.LogRecords, c.Partitions, c.Deliveries, c.Commits, c.CommitSamples)
		p("  acks=1 records lost or misplaced (reported, not required): %d of %d, in %d runs", c.AcksOneLost, c.AckedOne, c.AcksOneLossRuns)
		for _, w := range slices.Sorted(maps.Keys(c.WarningCounts)) {
			p("  warning %s: %d", w, c.WarningCounts[w])
		}
	}
	if r.EndsBehindAcks != "" {
		p("  warning: after the producers stopped, ListOffsets ended below acknowledged records: %s", r.EndsBehindAcks)
	}
	p("  healed: %s; progress after healing: %s; group caught up: %s", orDash(r.HealedAfter), orDash(r.ProgressAfterHeal), orDash(r.GroupCaughtUpAfter))
	p("  verify: %s", r.VerifyStats)
	for _, f := range r.Failures {
		p("  FAILED %s", f)
	}
	if c := r.Check; c != nil {
		for i, v := range c.Violations {
			if i == 8 {
				p("    ... %d more in result.json", len(c.Violations)-i)
				break
			}
			p("    %s %s-%d@%d: %s", v.Check, v.Topic, v.Partition, v.Offset, v.Detail)
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
