package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The produce gaps are pure, as Check is: ProduceGaps takes the
// acknowledgements and the faults as recorded and says how long each
// producer waited, at most, for its next acknowledgement while faults
// were injected, and which fault likely caused it. It is what "clients keep
// producing through the other agents with no election wait" is measured
// by (issue 34): a producer whose agent died must be acknowledged again,
// through another agent, within failure detection and a metadata
// refresh, not after an election.

// ProduceGap is one producer's longest wait between two acknowledgements
// in a row that overlaps the fault phase: of any of its partitions (the
// producer's gap), and of one partition (the partition's gap).
type ProduceGap struct {
	Producer string `json:"producer"` // the prefix of its values: all0, all1, ...
	Span
	// Partition is the partition whose own gap was the longest, and
	// PartitionGap that gap.
	Partition    TopicPartition `json:"partition"`
	PartitionGap Span           `json:"partition_gap"`
}

// Span is a wait between two acknowledgements, and the fault that most
// likely caused it (withFault).
type Span struct {
	Gap  time.Duration `json:"gap_ns"`
	From time.Time     `json:"from"` // the acknowledgement before the gap
	To   time.Time     `json:"to"`   // the one that ended it, or the fault phase's end (Open)
	// Open says no acknowledgement ended the gap before the fault phase
	// did: the producer was still waiting when the last fault ended.
	Open bool `json:"open,omitempty"`
	// Fault is the number (from 1, as logged) of the first fault that
	// began within the gap or up to faultSlack before it, else of the
	// last one that began before it; 0 if none did. FaultAt is when it
	// began, since the fault phase began; FaultWhat what it did. Later
	// counts the faults that began after it within the gap.
	Fault     int    `json:"fault,omitempty"`
	FaultAt   string `json:"fault_at,omitempty"`
	FaultWhat string `json:"fault_what,omitempty"`
	Later     int    `json:"later_faults,omitempty"`
}

// faultSlack is how long before a gap's first missing acknowledgement
// was due a fault may begin and still be its cause: the last
// acknowledgement before a kill may come a little after the kill (an
// answer already on its way), and a diskless one up to a commit
// interval after.
const faultSlack = time.Second

// describe prints s with times relative to start, the beginning of the
// fault phase.
func (s Span) describe(start time.Time) string {
	open := ""
	if s.Open {
		open = ", still open when the faults ended"
	}
	d := fmt.Sprintf("%v (+%v → +%v%s)", s.Gap.Round(time.Millisecond),
		s.From.Sub(start).Round(time.Millisecond), s.To.Sub(start).Round(time.Millisecond), open)
	if s.Fault > 0 {
		d += fmt.Sprintf(" after fault %d at +%s: %s", s.Fault, s.FaultAt, s.FaultWhat)
	}
	if s.Later > 0 {
		d += fmt.Sprintf(" (and %d later faults)", s.Later)
	}
	return d
}

// ProduceGaps returns, for each producer of acks (named by the prefix of
// its values, up to the last '-'), sorted by name, its longest gap and its
// longest partition gap that overlap the fault phase [from, to]. A
// producer whose last acknowledgement came before to has an open gap up
// to to.
func ProduceGaps(acks []Ack, faults []FaultRecord, from, to time.Time) []ProduceGap {
	byProducer := map[string][]Ack{}
	for _, a := range acks {
		name := a.Value
		if i := strings.LastIndexByte(name, '-'); i >= 0 {
			name = name[:i]
		}
		byProducer[name] = append(byProducer[name], a)
	}
	var out []ProduceGap
	for _, name := range slices.Sorted(maps.Keys(byProducer)) {
		list := byProducer[name]
		slices.SortStableFunc(list, func(a, b Ack) int { return a.At.Compare(b.At) })
		g := ProduceGap{Producer: name, Span: longest(list, from, to)}
		byTP := map[TopicPartition][]Ack{}
		for _, a := range list {
			byTP[a.TopicPartition] = append(byTP[a.TopicPartition], a)
		}
		for _, tp := range sortedKeys(byTP) {
			if s := longest(byTP[tp], from, to); s.Gap > g.PartitionGap.Gap {
				g.Partition, g.PartitionGap = tp, s
			}
		}
		g.Span = withFault(g.Span, faults, from)
		g.PartitionGap = withFault(g.PartitionGap, faults, from)
		out = append(out, g)
	}
	return out
}

// longest is the longest gap between acknowledgements in a row of list
// (sorted by time) that overlaps [from, to], with the open one after the
// last acknowledgement if it came before to.
func longest(list []Ack, from, to time.Time) Span {
	var best Span
	consider := func(a, b time.Time, open bool) {
		if b.After(from) && a.Before(to) && b.Sub(a) > best.Gap {
			best = Span{Gap: b.Sub(a), From: a, To: b, Open: open}
		}
	}
	for i := 1; i < len(list); i++ {
		consider(list[i-1].At, list[i].At, false)
	}
	if n := len(list); n > 0 && list[n-1].At.Before(to) {
		consider(list[n-1].At, to, true)
	}
	return best
}

// withFault names in s its likely cause among faults (in the order they
// began): the first that began in [From-faultSlack, To), else the last
// that began before that.
func withFault(s Span, faults []FaultRecord, start time.Time) Span {
	if s.Gap == 0 {
		return s
	}
	first, last := -1, -1
	for i, f := range faults {
		switch {
		case f.Time.Before(s.From.Add(-faultSlack)):
			last = i
		case f.Time.Before(s.To):
			if first < 0 {
				first = i
			} else {
				s.Later++
			}
		}
	}
	if first < 0 {
		first = last
	}
	if first < 0 {
		return s
	}
	f := faults[first]
	s.Fault, s.FaultAt, s.FaultWhat = first+1, f.Time.Sub(start).Round(time.Millisecond).String(), f.What
	return s
}

// LongestProduceGap is the longest of gaps, or the zero ProduceGap when
// there is none.
func LongestProduceGap(gaps []ProduceGap) ProduceGap {
	var out ProduceGap
	for _, g := range gaps {
		if g.Gap > out.Gap {
			out = g
		}
	}
	return out
}
