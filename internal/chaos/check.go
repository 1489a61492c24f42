package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// The checker is pure: Check takes what the workload recorded and what was
// read back after healing, and returns the violations. It does no I/O, so
// its rules are table-tested on hand-made histories (check_test.go).

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Ack is a record whose produce the cluster acknowledged, with the offset
// the acknowledgement carried.
type Ack struct {
	TopicPartition
	Offset int64
	Value  string
	At     time.Time // when the acknowledgement arrived
}

// LogRecord is one record of a partition as read back after healing.
type LogRecord struct {
	Offset int64
	Value  string
}

// Delivery is a record a member of the consumer group received, with the
// member id and generation it held when it polled the record.
type Delivery struct {
	TopicPartition
	Offset     int64
	Value      string
	Member     string
	Generation int32
}

// Commit is an offset commit the group coordinator acknowledged. Seq
// orders acknowledgements as the workload received them.
type Commit struct {
	Seq uint64
	TopicPartition
	Offset     int64
	Member     string
	Generation int32
}

// CommitSample is the group's committed offset of a partition as an
// OffsetFetch returned it; After is the Seq of the last commit
// acknowledged before the request was sent (0: none), so the sample must
// be at least every commit up to After.
type CommitSample struct {
	After uint64
	TopicPartition
	Offset int64
}

// History is everything Check looks at.
type History struct {
	// AcksAll are the records acknowledged to the idempotent acks=all
	// producers; AcksOne those acknowledged to the acks=1 producer.
	AcksAll []Ack
	AcksOne []Ack
	// Logs holds every partition of the workload's topics as read back
	// from offset 0 to its end after healing. A partition that could not
	// be read to its end is in Incomplete instead, with the reason.
	Logs       map[TopicPartition][]LogRecord
	Incomplete map[TopicPartition]string
	// Deliveries, Commits and Samples are the consumer group's.
	Deliveries []Delivery
	Commits    []Commit
	Samples    []CommitSample
	// GroupCaughtUp says the group's committed offsets reached the end of
	// every acks=all partition after healing; only then is every
	// acknowledged record owed a delivery.
	GroupCaughtUp bool
}

// Names of the checks. A violation of any of them fails the run, except
// the warnings and the acks=1 counts (a weaker promise, docs/design.md §11).
const (
	CheckAckedLost      = "acked-lost"             // an acknowledged acks=all record is not in the log
	CheckAckedMisplaced = "acked-misplaced"        // another record is at its acknowledged offset
	CheckDuplicated     = "duplicated"             // a value of the idempotent producers is in the log twice
	CheckContiguous     = "offsets-not-contiguous" // a partition's offsets have a gap or do not start at 0
	CheckReadback       = "readback-incomplete"    // a partition could not be read to its end
	CheckCommitBack     = "commit-backwards"       // an acknowledged commit is below an earlier one
	CheckCommitLost     = "commit-lost"            // OffsetFetch returned less than an acknowledged commit
	CheckPhantomRead    = "phantom-read"           // the group received a record the final log does not hold
	CheckNotDelivered   = "not-delivered"          // an acknowledged record never reached the group
	CheckGroupStuck     = "group-stuck"            // the group never caught up after healing

	WarnRedelivered = "redelivered-in-generation" // a member received an offset twice in one generation
)

// maxListed bounds the violations listed per check; Counts has them all.
// maxLossRuns bounds the acks=1 loss runs listed.
const (
	maxListed   = 20
	maxLossRuns = 500
)

// Violation is one broken promise.
type Violation struct {
	Check     string `json:"check"`
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Detail    string `json:"detail"`
}

// Report is what Check found.
type Report struct {
	// Counts is the number of violations per failing check; Violations
	// lists at most maxListed of each.
	Counts     map[string]int `json:"counts"`
	Violations []Violation    `json:"violations"`
	// Warnings are counted and listed the same way but do not fail.
	WarningCounts map[string]int `json:"warning_counts"`
	Warnings      []Violation    `json:"warnings"`

	AckedAll    int `json:"acked_all"`
	AckedOne    int `json:"acked_one"`
	AcksOneLost int `json:"acks_one_lost"` // lost or misplaced; reported, not required
	// AcksOneLosses are the runs of acks=1 records lost together, with
	// when they were acknowledged, to line them up with the faults.
	AcksOneLosses   []LossRun `json:"acks_one_losses,omitempty"` // the first maxLossRuns
	AcksOneLossRuns int       `json:"acks_one_loss_runs"`
	LogRecords      int       `json:"log_records"`
	Partitions      int       `json:"partitions"`
	Deliveries      int       `json:"deliveries"`
	Commits         int       `json:"commits"`
	CommitSamples   int       `json:"commit_samples"`
}

// OK reports whether no failing check was violated.
func (r *Report) OK() bool { return len(r.Counts) == 0 }

// Lost is the number of acknowledged acks=all records lost or misplaced.
func (r *Report) Lost() int { return r.Counts[CheckAckedLost] + r.Counts[CheckAckedMisplaced] }

func (r *Report) add(v Violation) {
	r.Counts[v.Check]++
	if r.Counts[v.Check] <= maxListed {
		r.Violations = append(r.Violations, v)
	}
}

func (r *Report) warn(v Violation) {
	r.WarningCounts[v.Check]++
	if r.WarningCounts[v.Check] <= maxListed {
		r.Warnings = append(r.Warnings, v)
	}
}

// Check applies every rule to h.
func Check(h History) *Report {
	r := &Report{Counts: map[string]int{}, WarningCounts: map[string]int{},
		AckedAll: len(h.AcksAll), AckedOne: len(h.AcksOne), Deliveries: len(h.Deliveries),
		Commits: len(h.Commits), CommitSamples: len(h.Samples), Partitions: len(h.Logs)}
	for _, tp := range sortedKeys(h.Incomplete) {
		r.add(Violation{Check: CheckReadback, Topic: tp.Topic, Partition: tp.Partition, Offset: -1, Detail: h.Incomplete[tp]})
	}
	logs := indexLogs(h.Logs)
	for _, tp := range sortedKeys(h.Logs) {
		r.LogRecords += len(h.Logs[tp])
		checkContiguous(r, tp, h.Logs[tp])
	}
	checkAcked(r, h, logs)
	runs := lossRuns(h.AcksOne, logs, h.Incomplete)
	for _, run := range runs {
		r.AcksOneLost += run.Records
	}
	r.AcksOneLossRuns = len(runs)
	r.AcksOneLosses = runs[:min(len(runs), maxLossRuns)]
	checkCommits(r, h)
	checkDeliveries(r, h, logs)
	return r
}

// partitionIndex is one partition's log by offset and by value.
type partitionIndex struct {
	byOffset map[int64]string
	byValue  map[string][]int64
}

func indexLogs(logs map[TopicPartition][]LogRecord) map[TopicPartition]*partitionIndex {
	out := make(map[TopicPartition]*partitionIndex, len(logs))
	for tp, recs := range logs {
		ix := &partitionIndex{byOffset: make(map[int64]string, len(recs)), byValue: make(map[string][]int64, len(recs))}
		for _, rec := range recs {
			ix.byOffset[rec.Offset] = rec.Value
			ix.byValue[rec.Value] = append(ix.byValue[rec.Value], rec.Offset)
		}
		out[tp] = ix
	}
	return out
}

func checkContiguous(r *Report, tp TopicPartition, recs []LogRecord) {
	for i, rec := range recs {
		if rec.Offset != int64(i) {
			r.add(Violation{Check: CheckContiguous, Topic: tp.Topic, Partition: tp.Partition, Offset: rec.Offset,
				Detail: fmt.Sprintf("record %d of the log is at offset %d (previous %d)", i, rec.Offset, prevOffset(recs, i))})
			return // one gap shifts every later record; report it once
		}
	}
}

func prevOffset(recs []LogRecord, i int) int64 {
	if i == 0 {
		return -1
	}
	return recs[i-1].Offset
}

// checkAcked: every acknowledged acks=all record is in the log exactly
// once, at its offset; and no value of the idempotent producers is in the
// log twice, acknowledged or not.
func checkAcked(r *Report, h History, logs map[TopicPartition]*partitionIndex) {
	acked := map[TopicPartition]bool{}
	for _, a := range h.AcksAll {
		acked[a.TopicPartition] = true
		if _, skip := h.Incomplete[a.TopicPartition]; skip {
			continue // reported as readback-incomplete
		}
		ix := logs[a.TopicPartition]
		if ix == nil {
			r.add(Violation{Check: CheckAckedLost, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
				Detail: fmt.Sprintf("%q acknowledged; the partition was not read back", a.Value)})
			continue
		}
		got, ok := ix.byOffset[a.Offset]
		where := ix.byValue[a.Value]
		switch {
		case !ok:
			r.add(Violation{Check: CheckAckedLost, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
				Detail: fmt.Sprintf("%q acknowledged at offset %d; the log has no record there (found at %v)", a.Value, a.Offset, where)})
		case got != a.Value:
			r.add(Violation{Check: CheckAckedMisplaced, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
				Detail: fmt.Sprintf("%q acknowledged at offset %d; the log has %q there (acknowledged value found at %v)", a.Value, a.Offset, got, where)})
		}
	}
	for _, tp := range sortedKeys(logs) {
		if !acked[tp] {
			continue // an acks=1 topic: its producer is not idempotent
		}
		ix := logs[tp]
		for _, rec := range h.Logs[tp] {
			if at := ix.byValue[rec.Value]; len(at) > 1 && at[0] == rec.Offset {
				r.add(Violation{Check: CheckDuplicated, Topic: tp.Topic, Partition: tp.Partition, Offset: rec.Offset,
					Detail: fmt.Sprintf("%q is in the log %d times, at offsets %v", rec.Value, len(at), at)})
			}
		}
	}
}

// LossRun is a run of acknowledged records of one partition, consecutive
// in the order their acknowledgements arrived, that are all lost or
// misplaced. (Offsets of lost records are given again to later records,
// so offset order would interleave the lost with the kept.)
type LossRun struct {
	TopicPartition
	FirstOffset int64     `json:"first_offset"`
	LastOffset  int64     `json:"last_offset"`
	Records     int       `json:"records"`
	FirstAck    time.Time `json:"first_ack"`
	LastAck     time.Time `json:"last_ack"`
}

// lossRuns finds the acknowledged records that are not at their offset,
// grouped in runs.
func lossRuns(acks []Ack, logs map[TopicPartition]*partitionIndex, incomplete map[TopicPartition]string) []LossRun {
	byTP := map[TopicPartition][]Ack{}
	for _, a := range acks {
		if _, skip := incomplete[a.TopicPartition]; !skip {
			byTP[a.TopicPartition] = append(byTP[a.TopicPartition], a)
		}
	}
	var runs []LossRun
	for _, tp := range sortedKeys(byTP) {
		list := byTP[tp]
		slices.SortStableFunc(list, func(a, b Ack) int { return a.At.Compare(b.At) })
		ix := logs[tp]
		open := false
		for _, a := range list {
			if ix != nil && ix.byOffset[a.Offset] == a.Value {
				open = false
				continue
			}
			if !open {
				runs = append(runs, LossRun{TopicPartition: tp, FirstOffset: a.Offset, LastOffset: a.Offset, FirstAck: a.At})
				open = true
			}
			cur := &runs[len(runs)-1]
			cur.FirstOffset = min(cur.FirstOffset, a.Offset)
			cur.LastOffset = max(cur.LastOffset, a.Offset)
			cur.LastAck = a.At
			cur.Records++
		}
	}
	return runs
}

// checkCommits: acknowledged commits of a partition never go down, and an
// OffsetFetch never returns less than a commit acknowledged before it.
func checkCommits(r *Report, h History) {
	commits := slices.SortedFunc(slices.Values(h.Commits), func(a, b Commit) int { return cmp.Compare(a.Seq, b.Seq) })
	highest := map[TopicPartition]Commit{}
	// highestUpTo[tp] lists (seq, running max) to answer "max commit with
	// Seq <= s" for the samples.
	type step struct {
		seq    uint64
		offset int64
	}
	upTo := map[TopicPartition][]step{}
	for _, c := range commits {
		if prev, ok := highest[c.TopicPartition]; ok && c.Offset < prev.Offset {
			r.add(Violation{Check: CheckCommitBack, Topic: c.Topic, Partition: c.Partition, Offset: c.Offset,
				Detail: fmt.Sprintf("commit %d (member %s, generation %d) is below commit %d of offset %d (member %s, generation %d)",
					c.Seq, c.Member, c.Generation, prev.Seq, prev.Offset, prev.Member, prev.Generation)})
			continue
		}
		highest[c.TopicPartition] = c
		upTo[c.TopicPartition] = append(upTo[c.TopicPartition], step{c.Seq, c.Offset})
	}
	for _, s := range h.Samples {
		steps := upTo[s.TopicPartition]
		i, _ := slices.BinarySearchFunc(steps, s.After+1, func(st step, seq uint64) int { return cmp.Compare(st.seq, seq) })
		if i == 0 {
			continue // nothing was acknowledged before this sample
		}
		if want := steps[i-1]; s.Offset < want.offset {
			r.add(Violation{Check: CheckCommitLost, Topic: s.Topic, Partition: s.Partition, Offset: s.Offset,
				Detail: fmt.Sprintf("OffsetFetch returned %d after commit %d of offset %d was acknowledged", s.Offset, want.seq, want.offset)})
		}
	}
}

// checkDeliveries: the group received only records that are in the final
// log at the offset it received them (consumers see only what is below the
// high watermark, which no failover truncates); with the group caught up,
// it received every acknowledged record; and a member receives an offset
// at most once per generation (a warning: the client may rewind on its
// own, for example after an OffsetOutOfRange).
func checkDeliveries(r *Report, h History, logs map[TopicPartition]*partitionIndex) {
	type key struct {
		tp     TopicPartition
		offset int64
	}
	type genKey struct {
		key
		member     string
		generation int32
	}
	delivered := map[key]bool{}
	seen := map[genKey]bool{}
	for _, d := range h.Deliveries {
		k := key{d.TopicPartition, d.Offset}
		delivered[k] = true
		gk := genKey{k, d.Member, d.Generation}
		if seen[gk] {
			r.warn(Violation{Check: WarnRedelivered, Topic: d.Topic, Partition: d.Partition, Offset: d.Offset,
				Detail: fmt.Sprintf("member %s received offset %d twice in generation %d", d.Member, d.Offset, d.Generation)})
		}
		seen[gk] = true
		if _, skip := h.Incomplete[d.TopicPartition]; skip {
			continue
		}
		ix := logs[d.TopicPartition]
		if ix == nil {
			continue
		}
		if got, ok := ix.byOffset[d.Offset]; !ok || got != d.Value {
			r.add(Violation{Check: CheckPhantomRead, Topic: d.Topic, Partition: d.Partition, Offset: d.Offset,
				Detail: fmt.Sprintf("member %s (generation %d) received %q at offset %d; the final log has %q (present %v)", d.Member, d.Generation, d.Value, d.Offset, got, ok)})
		}
	}
	if !h.GroupCaughtUp {
		r.add(Violation{Check: CheckGroupStuck, Offset: -1, Detail: "the group's committed offsets did not reach the end of every partition after healing"})
		return
	}
	for _, a := range h.AcksAll {
		if _, skip := h.Incomplete[a.TopicPartition]; skip {
			continue
		}
		if !delivered[key{a.TopicPartition, a.Offset}] {
			r.add(Violation{Check: CheckNotDelivered, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
				Detail: fmt.Sprintf("%q acknowledged at offset %d was never received by the group", a.Value, a.Offset)})
		}
	}
}

func sortedKeys[V any](m map[TopicPartition]V) []TopicPartition {
	keys := make([]TopicPartition, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return keys
}
