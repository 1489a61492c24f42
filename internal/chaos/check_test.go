package chaos

import (
	"maps"
	"slices"
	"testing"
	"time"
)

var tpA = TopicPartition{"a", 0}

// logOf is a log of the values at offsets 0, 1, ...
func logOf(values ...string) []LogRecord {
	out := make([]LogRecord, len(values))
	for i, v := range values {
		out[i] = LogRecord{Offset: int64(i), Value: v}
	}
	return out
}

func acks(values map[int64]string) []Ack {
	var out []Ack
	for _, off := range slices.Sorted(maps.Keys(values)) {
		out = append(out, Ack{TopicPartition: tpA, Offset: off, Value: values[off]})
	}
	return out
}

func deliveriesOf(member string, generation int32, values ...string) []Delivery {
	var out []Delivery
	for i, v := range values {
		out = append(out, Delivery{tpA, int64(i), v, member, generation})
	}
	return out
}

func TestCheck(t *testing.T) {
	full := logOf("x0", "x1", "x2")
	fullAcks := acks(map[int64]string{0: "x0", 1: "x1", 2: "x2"})
	for _, tc := range []struct {
		name     string
		h        History
		want     map[string]int // failing checks and their counts
		warnings map[string]int
		acks1    int // acks=1 records lost
	}{
		{
			name: "all there",
			h:    History{AcksAll: fullAcks, Logs: map[TopicPartition][]LogRecord{tpA: full}, Deliveries: deliveriesOf("m", 1, "x0", "x1", "x2"), GroupCaughtUp: true},
		},
		{
			name: "unacknowledged records may be in the log",
			h:    History{AcksAll: acks(map[int64]string{1: "x1"}), Logs: map[TopicPartition][]LogRecord{tpA: full}, Deliveries: deliveriesOf("m", 1, "x0", "x1"), GroupCaughtUp: true},
		},
		{
			name: "acknowledged record past the end of the log",
			h:    History{AcksAll: fullAcks, Logs: map[TopicPartition][]LogRecord{tpA: logOf("x0", "x1")}, Deliveries: deliveriesOf("m", 1, "x0", "x1"), GroupCaughtUp: true},
			want: map[string]int{CheckAckedLost: 1, CheckNotDelivered: 1},
		},
		{
			name: "another record at the acknowledged offset",
			h:    History{AcksAll: fullAcks, Logs: map[TopicPartition][]LogRecord{tpA: logOf("x0", "y", "x2")}, Deliveries: deliveriesOf("m", 1, "x0", "y", "x2"), GroupCaughtUp: true},
			want: map[string]int{CheckAckedMisplaced: 1},
		},
		{
			name: "an acknowledged record twice",
			h:    History{AcksAll: fullAcks, Logs: map[TopicPartition][]LogRecord{tpA: logOf("x0", "x1", "x2", "x1")}, Deliveries: deliveriesOf("m", 1, "x0", "x1", "x2", "x1"), GroupCaughtUp: true},
			want: map[string]int{CheckDuplicated: 1},
		},
		{
			name: "gap in the offsets",
			h: History{AcksAll: acks(map[int64]string{0: "x0", 2: "x2"}), Logs: map[TopicPartition][]LogRecord{tpA: {{0, "x0"}, {2, "x2"}}},
				Deliveries: []Delivery{{tpA, 0, "x0", "m", 1}, {tpA, 2, "x2", "m", 1}}, GroupCaughtUp: true},
			want: map[string]int{CheckContiguous: 1},
		},
		{
			name: "log does not start at 0",
			h:    History{Logs: map[TopicPartition][]LogRecord{tpA: {{5, "x5"}}}, GroupCaughtUp: true},
			want: map[string]int{CheckContiguous: 1},
		},
		{
			name: "partition not read to its end",
			h:    History{AcksAll: fullAcks, Incomplete: map[TopicPartition]string{tpA: "timeout"}, GroupCaughtUp: true},
			want: map[string]int{CheckReadback: 1},
		},
		{
			name: "commits go down",
			h: History{Logs: map[TopicPartition][]LogRecord{tpA: full}, GroupCaughtUp: true,
				Commits: []Commit{{1, tpA, 2, "m1", 1}, {2, tpA, 3, "m1", 1}, {3, tpA, 1, "m2", 2}, {4, tpA, 3, "m2", 2}}},
			want: map[string]int{CheckCommitBack: 1},
		},
		{
			name: "OffsetFetch below an acknowledged commit",
			h: History{Logs: map[TopicPartition][]LogRecord{tpA: full}, GroupCaughtUp: true,
				Commits: []Commit{{1, tpA, 2, "m", 1}, {2, tpA, 3, "m", 1}},
				Samples: []CommitSample{{0, tpA, -1}, {1, tpA, 2}, {1, tpA, 3}, {2, tpA, 3}, {2, tpA, 2}, {5, tpA, 0}}},
			want: map[string]int{CheckCommitLost: 2},
		},
		{
			name: "a sample sent before a commit was acknowledged may be lower",
			h: History{Logs: map[TopicPartition][]LogRecord{tpA: full}, GroupCaughtUp: true,
				Commits: []Commit{{1, tpA, 2, "m", 1}, {2, tpA, 3, "m", 1}},
				Samples: []CommitSample{{1, tpA, 2}}},
		},
		{
			name: "group received a record the final log does not hold",
			h: History{AcksAll: fullAcks, Logs: map[TopicPartition][]LogRecord{tpA: full}, GroupCaughtUp: true,
				Deliveries: append(deliveriesOf("m", 1, "x0", "x1", "x2"), Delivery{tpA, 3, "z", "m", 1})},
			want: map[string]int{CheckPhantomRead: 1},
		},
		{
			name: "group never caught up",
			h:    History{AcksAll: fullAcks, Logs: map[TopicPartition][]LogRecord{tpA: full}},
			want: map[string]int{CheckGroupStuck: 1},
		},
		{
			name: "redelivery across generations is fine, within one a warning",
			h: History{AcksAll: fullAcks, Logs: map[TopicPartition][]LogRecord{tpA: full}, GroupCaughtUp: true,
				Deliveries: slices.Concat(deliveriesOf("m", 1, "x0", "x1"), deliveriesOf("m", 2, "x0", "x1", "x2"), deliveriesOf("m", 2, "x0"))},
			warnings: map[string]int{WarnRedelivered: 1},
		},
		{
			name: "acks=1 losses are counted, not failed",
			h: History{AcksOne: []Ack{{TopicPartition: tpA, Offset: 0, Value: "o0"}, {TopicPartition: tpA, Offset: 1, Value: "o1"}, {TopicPartition: tpA, Offset: 2, Value: "o2"}},
				Logs: map[TopicPartition][]LogRecord{tpA: logOf("o0", "p", "q")}, GroupCaughtUp: true},
			acks1: 2,
		},
		{
			name: "values of the acks=1 producer may repeat",
			h: History{AcksOne: []Ack{{TopicPartition: tpA, Offset: 0, Value: "o0"}},
				Logs: map[TopicPartition][]LogRecord{tpA: logOf("o0", "o0")}, GroupCaughtUp: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h)
			if tc.want == nil {
				tc.want = map[string]int{}
			}
			if tc.warnings == nil {
				tc.warnings = map[string]int{}
			}
			if !maps.Equal(r.Counts, tc.want) {
				t.Errorf("counts %v, want %v; violations %+v", r.Counts, tc.want, r.Violations)
			}
			if !maps.Equal(r.WarningCounts, tc.warnings) {
				t.Errorf("warnings %v, want %v", r.WarningCounts, tc.warnings)
			}
			if r.AcksOneLost != tc.acks1 {
				t.Errorf("acks=1 lost %d, want %d", r.AcksOneLost, tc.acks1)
			}
			if r.OK() != (len(tc.want) == 0) {
				t.Errorf("OK() = %v with counts %v", r.OK(), r.Counts)
			}
		})
	}
}

func TestCheckListsAtMostMaxListed(t *testing.T) {
	var a []Ack
	for i := range 3 * maxListed {
		a = append(a, Ack{TopicPartition: tpA, Offset: int64(i), Value: "v"})
	}
	r := Check(History{AcksAll: a, Logs: map[TopicPartition][]LogRecord{tpA: nil}, GroupCaughtUp: true})
	if r.Counts[CheckAckedLost] != 3*maxListed || len(r.Violations) != 2*maxListed { // lost + not delivered
		t.Fatalf("counts %v, %d listed; want %d lost and %d listed", r.Counts, len(r.Violations), 3*maxListed, 2*maxListed)
	}
	if r.Lost() != 3*maxListed {
		t.Fatalf("Lost() = %d", r.Lost())
	}
}

func TestLossRuns(t *testing.T) {
	at := func(i int) time.Time { return time.Unix(1000+int64(i), 0) }
	// o1 and o2 are lost at offsets 1 and 2, which o3 and o4 then take;
	// o6 is lost at the end.
	a := []Ack{
		{tpA, 0, "o0", at(0)}, {tpA, 1, "o1", at(1)}, {tpA, 2, "o2", at(2)},
		{tpA, 1, "o3", at(3)}, {tpA, 2, "o4", at(4)}, {tpA, 3, "o5", at(5)}, {tpA, 4, "o6", at(6)},
	}
	r := Check(History{AcksOne: a, Logs: map[TopicPartition][]LogRecord{tpA: logOf("o0", "o3", "o4", "o5")}, GroupCaughtUp: true})
	var got [][3]int64
	for _, run := range r.AcksOneLosses {
		got = append(got, [3]int64{run.FirstOffset, run.LastOffset, int64(run.Records)})
	}
	if want := [][3]int64{{1, 2, 2}, {4, 4, 1}}; !slices.Equal(got, want) {
		t.Fatalf("loss runs %v, want %v", got, want)
	}
	if r.AcksOneLost != 3 || !r.AcksOneLosses[0].FirstAck.Equal(at(1)) || !r.AcksOneLosses[0].LastAck.Equal(at(2)) {
		t.Fatalf("lost %d, first run %+v", r.AcksOneLost, r.AcksOneLosses[0])
	}
}
