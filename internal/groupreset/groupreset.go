// Package groupreset moves a consumer group's committed offsets, as Kafka's
// kafka-consumer-groups --reset-offsets does. `strata group reset-offsets`
// and the console's reset action (agent/httpapi) both use it, so the rules
// are one:
//
//   - the target is exactly one of earliest, latest, a time, an offset or a
//     shift from the current commit (a shift without a commit starts from
//     the log start), always clamped to the partition's [log start, log
//     end];
//   - the scope is named topics (all their partitions, or some) or every
//     topic the group has committed offsets for;
//   - Plan refuses a group with members, since a live member would
//     overwrite the reset with its next commit; Commit sends every planned
//     offset in one OffsetCommit, and nothing when a partition of the plan
//     did not resolve.
//
// Everything goes through the Kafka API with the caller's kadm client, so
// the broker's authorizer decides as for any other client. Errors from the
// broker come back as *StepError wrapping the Kafka error (errors.As finds
// the *kerr.Error).
package groupreset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

var (
	// ErrTarget: not exactly one target.
	ErrTarget = errors.New("group reset-offsets: give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by")
	// ErrScope: neither named topics nor all topics, or both.
	ErrScope = errors.New("group reset-offsets: give --topic (repeatable) or --all-topics")
	// ErrTopic: a topic spec that is not NAME or NAME:P,P,...
	ErrTopic = errors.New("group reset-offsets: --topic must be NAME or NAME:P,P,...")
	// ErrGroupActive: the group has members.
	ErrGroupActive = errors.New("group reset-offsets: the group has members; stop its consumers first")
	// ErrNoCommits: all topics were asked of a group that committed none.
	ErrNoCommits = errors.New("group reset-offsets: the group has no committed offsets (--all-topics resets those)")
)

// Target says where each partition's offset goes; exactly one field is
// set (ParseTarget checks).
type Target struct {
	Earliest, Latest bool
	At               time.Time // --to-datetime
	Offset           *int64    // --to-offset
	Shift            *int64    // --shift-by
}

// Row is one partition of a plan.
type Row struct {
	Topic     string
	Partition int32
	// Current is the committed offset, -1 without a commit (HadCommit).
	Current, Next int64
	Start, End    int64
	HadCommit     bool
	// ListErr is why the partition's range is unknown; such a row stops
	// Commit before anything is sent.
	ListErr error
	// CommitErr is the broker's refusal of this partition's commit.
	CommitErr error
}

// StepError is a failure the cluster reported for one step of a reset.
type StepError struct {
	Op       string // "describe group", "fetch offsets", "list offsets", "commit offsets"
	Resource string // the group or the topics
	Err      error  // usually a *kerr.Error
}

func (e *StepError) Error() string { return e.Op + " " + e.Resource + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// ParseTarget checks that exactly one target is given: earliest, latest,
// datetime (RFC 3339) when not empty, toOffset when toOffsetSet, shiftBy
// when shiftBySet.
func ParseTarget(earliest, latest bool, datetime string, toOffset int64, toOffsetSet bool, shiftBy int64, shiftBySet bool) (Target, error) {
	var t Target
	n := 0
	if earliest {
		t.Earliest = true
		n++
	}
	if latest {
		t.Latest = true
		n++
	}
	if datetime != "" {
		at, err := time.Parse(time.RFC3339, datetime)
		if err != nil {
			return t, fmt.Errorf("group reset-offsets: --to-datetime %q: %w", datetime, err)
		}
		t.At = at
		n++
	}
	if toOffsetSet {
		t.Offset = &toOffset
		n++
	}
	if shiftBySet {
		t.Shift = &shiftBy
		n++
	}
	if n != 1 {
		return t, ErrTarget
	}
	return t, nil
}

// ParseScope returns the partitions to reset by topic (nil: every
// partition of the topic) from specs NAME or NAME:P,P,...; a nil map
// means all topics.
func ParseScope(topics []string, all bool) (map[string][]int32, error) {
	if all == (len(topics) > 0) {
		return nil, ErrScope
	}
	if all {
		return nil, nil
	}
	out := map[string][]int32{}
	for _, spec := range topics {
		name, list, hasList := strings.Cut(spec, ":")
		if name == "" {
			return nil, fmt.Errorf("%w (got %q)", ErrTopic, spec)
		}
		if !hasList {
			out[name] = nil
			continue
		}
		for _, p := range strings.Split(list, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w (got %q)", ErrTopic, spec)
			}
			out[name] = append(out[name], int32(n))
		}
	}
	return out, nil
}

// Plan reads the group's commits and the partitions' ranges and computes
// each partition's new offset. It refuses a group with members
// (ErrGroupActive).
func Plan(ctx context.Context, adm *kadm.Client, group string, scope map[string][]int32, target Target) ([]Row, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, &StepError{"describe group", group, err}
	}
	if d := described[group]; d.Err != nil {
		return nil, &StepError{"describe group", group, d.Err}
	} else if len(d.Members) > 0 {
		return nil, fmt.Errorf("%w (group %s is %s with %d members)", ErrGroupActive, group, d.State, len(d.Members))
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return nil, &StepError{"fetch offsets", group, err}
	}
	if scope == nil {
		scope = map[string][]int32{}
		for t := range committed.Offsets() {
			scope[t] = nil
		}
		if len(scope) == 0 {
			return nil, fmt.Errorf("%w (group %s)", ErrNoCommits, group)
		}
	}
	topics := slices.Sorted(maps.Keys(scope))
	listErr := func(err error) error { return &StepError{"list offsets", strings.Join(topics, ","), err} }
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, listErr(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, listErr(err)
	}
	var byTime kadm.ListedOffsets
	if !target.At.IsZero() {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, target.At.UnixMilli(), topics...); err != nil {
			return nil, listErr(err)
		}
	}
	var rows []Row
	for _, topic := range topics {
		parts := scope[topic]
		if parts == nil {
			ps, ok := ends[topic]
			if !ok {
				return nil, fmt.Errorf("group reset-offsets: topic %s: UNKNOWN_TOPIC_OR_PARTITION", topic)
			}
			parts = slices.Sorted(maps.Keys(ps))
		}
		for _, p := range parts {
			row := Row{Topic: topic, Partition: p, Current: -1}
			if o, ok := committed.Lookup(topic, p); ok && o.At >= 0 {
				row.Current, row.HadCommit = o.At, true
			}
			s, okS := starts.Lookup(topic, p)
			e, okE := ends.Lookup(topic, p)
			switch {
			case !okS || !okE:
				row.ListErr = fmt.Errorf("partition %s-%d does not exist", topic, p)
			case s.Err != nil:
				row.ListErr = s.Err
			case e.Err != nil:
				row.ListErr = e.Err
			default:
				row.Start, row.End = s.Offset, e.Offset
				row.Next = target.OffsetFor(row, byTime)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// OffsetFor computes the new offset of one partition, clamped to its
// range; byTime holds the offsets ListOffsets found for a time target.
func (t Target) OffsetFor(r Row, byTime kadm.ListedOffsets) int64 {
	var next int64
	switch {
	case t.Earliest:
		next = r.Start
	case t.Latest:
		next = r.End
	case t.Offset != nil:
		next = *t.Offset
	case t.Shift != nil:
		base := r.Current
		if !r.HadCommit {
			base = r.Start // nothing committed: shift from the log start
		}
		next = base + *t.Shift
	default:
		next = r.End
		if o, ok := byTime.Lookup(r.Topic, r.Partition); ok && o.Err == nil && o.Offset >= 0 {
			next = o.Offset
		}
	}
	return min(max(next, r.Start), r.End)
}

// Commit commits every planned offset in one OffsetCommit and sets each
// row's CommitErr; a row whose partition failed to resolve stops the
// whole reset before anything is sent.
func Commit(ctx context.Context, adm *kadm.Client, group string, rows []Row) error {
	offsets := kadm.Offsets{}
	for _, r := range rows {
		if r.ListErr != nil {
			return fmt.Errorf("group reset-offsets: %s-%d: %v; nothing committed", r.Topic, r.Partition, r.ListErr)
		}
		offsets.Add(kadm.Offset{Topic: r.Topic, Partition: r.Partition, At: r.Next, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return &StepError{"commit offsets", group, err}
	}
	for i := range rows {
		if r, ok := resps.Lookup(rows[i].Topic, rows[i].Partition); ok && r.Err != nil {
			rows[i].CommitErr = r.Err
		}
	}
	return nil
}
