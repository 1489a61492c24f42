package main

// `strata group reset-offsets` moves a group's committed offsets, as Kafka's
// kafka-consumer-groups --reset-offsets does: the target is earliest,
// latest, a time, an offset or a shift from the current commit, always
// clamped to the partition's [log start, log end]. It prints the plan and
// commits it only with --execute, and only while the group has no members
// (a live member would overwrite the reset with its next commit).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

var (
	errResetTarget = errors.New("group reset-offsets: give exactly one of --to-earliest, --to-latest, --to-datetime, --to-offset, --shift-by")
	errResetScope  = errors.New("group reset-offsets: give --topic (repeatable) or --all-topics")
	errResetTopic  = errors.New("group reset-offsets: --topic must be NAME or NAME:P,P,...")
	errGroupActive = errors.New("group reset-offsets: the group has members; stop its consumers first")
)

// resetTarget says where each partition's offset goes.
type resetTarget struct {
	earliest, latest bool
	at               time.Time // --to-datetime
	offset           *int64    // --to-offset
	shift            *int64    // --shift-by
}

// resetRow is one partition of the plan.
type resetRow struct {
	topic          string
	partition      int32
	current, next  int64 // current is -1 without a commit
	start, end     int64
	hadCommit      bool
	listErr        error
	commitErrorMsg string
}

func newGroupResetCmd(cf *clientFlags) *cobra.Command {
	var (
		topics             []string
		allTopics, execute bool
		earliest, latest   bool
		datetime           string
		toOffset, shiftBy  int64
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP",
		Short: "Move a group's committed offsets (dry run unless --execute)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := parseResetTarget(earliest, latest, datetime,
				toOffset, cmd.Flags().Changed("to-offset"), shiftBy, cmd.Flags().Changed("shift-by"))
			if err != nil {
				return err
			}
			scope, err := parseResetScope(topics, allTopics)
			if err != nil {
				return err
			}
			group := args[0]
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				rows, err := planReset(ctx, adm, group, scope, target)
				if err != nil {
					return err
				}
				if execute {
					if err := commitReset(ctx, adm, group, rows); err != nil {
						return err
					}
				}
				return printReset(cmd, group, rows, execute)
			})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&topics, "topic", nil, "A topic to reset, NAME for all its partitions or NAME:0,2 for some; repeat for more.")
	f.BoolVar(&allTopics, "all-topics", false, "Reset every topic the group has committed offsets for.")
	f.BoolVar(&earliest, "to-earliest", false, "Move to each partition's log start.")
	f.BoolVar(&latest, "to-latest", false, "Move to each partition's log end.")
	f.StringVar(&datetime, "to-datetime", "", "Move to the first record at or after this time (RFC 3339, e.g. 2026-01-02T15:04:05Z).")
	f.Int64Var(&toOffset, "to-offset", 0, "Move to this offset (clamped to the partition's range).")
	f.Int64Var(&shiftBy, "shift-by", 0, "Move the committed offset by this many records (negative goes back).")
	f.BoolVar(&execute, "execute", false, "Commit the new offsets; without it the plan is only printed.")
	return cmd
}

func parseResetTarget(earliest, latest bool, datetime string, toOffset int64, toOffsetSet bool, shiftBy int64, shiftBySet bool) (resetTarget, error) {
	var t resetTarget
	n := 0
	if earliest {
		t.earliest = true
		n++
	}
	if latest {
		t.latest = true
		n++
	}
	if datetime != "" {
		at, err := time.Parse(time.RFC3339, datetime)
		if err != nil {
			return t, fmt.Errorf("group reset-offsets: --to-datetime %q: %w", datetime, err)
		}
		t.at = at
		n++
	}
	if toOffsetSet {
		t.offset = &toOffset
		n++
	}
	if shiftBySet {
		t.shift = &shiftBy
		n++
	}
	if n != 1 {
		return t, errResetTarget
	}
	return t, nil
}

// parseResetScope returns the partitions to reset by topic (nil: every
// partition of the topic); a nil map means --all-topics.
func parseResetScope(topics []string, all bool) (map[string][]int32, error) {
	if all == (len(topics) > 0) {
		return nil, errResetScope
	}
	if all {
		return nil, nil
	}
	out := map[string][]int32{}
	for _, spec := range topics {
		name, list, hasList := strings.Cut(spec, ":")
		if name == "" {
			return nil, fmt.Errorf("%w (got %q)", errResetTopic, spec)
		}
		if !hasList {
			out[name] = nil
			continue
		}
		for _, p := range strings.Split(list, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w (got %q)", errResetTopic, spec)
			}
			out[name] = append(out[name], int32(n))
		}
	}
	return out, nil
}

// planReset reads the group's commits and the partitions' ranges and
// computes each partition's new offset. It refuses a group with members.
func planReset(ctx context.Context, adm *kadm.Client, group string, scope map[string][]int32, target resetTarget) ([]resetRow, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, newBrokerError("describe group", group, err, "")
	}
	if d := described[group]; d.Err != nil {
		return nil, newBrokerError("describe group", group, d.Err, "")
	} else if len(d.Members) > 0 {
		return nil, fmt.Errorf("%w (group %s is %s with %d members)", errGroupActive, group, d.State, len(d.Members))
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return nil, newBrokerError("fetch offsets", group, err, "")
	}
	if scope == nil {
		scope = map[string][]int32{}
		for t := range committed.Offsets() {
			scope[t] = nil
		}
		if len(scope) == 0 {
			return nil, fmt.Errorf("group reset-offsets: group %s has no committed offsets (--all-topics resets those)", group)
		}
	}
	topics := slices.Sorted(maps.Keys(scope))
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return nil, newBrokerError("list offsets", strings.Join(topics, ","), err, "")
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, newBrokerError("list offsets", strings.Join(topics, ","), err, "")
	}
	var byTime kadm.ListedOffsets
	if !target.at.IsZero() {
		if byTime, err = adm.ListOffsetsAfterMilli(ctx, target.at.UnixMilli(), topics...); err != nil {
			return nil, newBrokerError("list offsets", strings.Join(topics, ","), err, "")
		}
	}
	var rows []resetRow
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
			row := resetRow{topic: topic, partition: p, current: -1}
			if o, ok := committed.Lookup(topic, p); ok && o.At >= 0 {
				row.current, row.hadCommit = o.At, true
			}
			s, okS := starts.Lookup(topic, p)
			e, okE := ends.Lookup(topic, p)
			switch {
			case !okS || !okE:
				row.listErr = fmt.Errorf("partition %s-%d does not exist", topic, p)
			case s.Err != nil:
				row.listErr = s.Err
			case e.Err != nil:
				row.listErr = e.Err
			default:
				row.start, row.end = s.Offset, e.Offset
				row.next = target.offsetFor(row, byTime)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// offsetFor computes the new offset of one partition, clamped to its range.
func (t resetTarget) offsetFor(r resetRow, byTime kadm.ListedOffsets) int64 {
	var next int64
	switch {
	case t.earliest:
		next = r.start
	case t.latest:
		next = r.end
	case t.offset != nil:
		next = *t.offset
	case t.shift != nil:
		base := r.current
		if !r.hadCommit {
			base = r.start // nothing committed: shift from the log start
		}
		next = base + *t.shift
	default:
		next = r.end
		if o, ok := byTime.Lookup(r.topic, r.partition); ok && o.Err == nil && o.Offset >= 0 {
			next = o.Offset
		}
	}
	return min(max(next, r.start), r.end)
}

// commitReset commits every planned offset in one OffsetCommit; a row whose
// partition failed to resolve stops the whole reset before anything is sent.
func commitReset(ctx context.Context, adm *kadm.Client, group string, rows []resetRow) error {
	offsets := kadm.Offsets{}
	for _, r := range rows {
		if r.listErr != nil {
			return fmt.Errorf("group reset-offsets: %s-%d: %v; nothing committed", r.topic, r.partition, r.listErr)
		}
		offsets.Add(kadm.Offset{Topic: r.topic, Partition: r.partition, At: r.next, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return newBrokerError("commit offsets", group, err, "")
	}
	for i := range rows {
		if r, ok := resps.Lookup(rows[i].topic, rows[i].partition); ok && r.Err != nil {
			rows[i].commitErrorMsg = kafkaErrorText(r.Err)
		}
	}
	return nil
}

func printReset(cmd *cobra.Command, group string, rows []resetRow, executed bool) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT\tNEW\tLOG-START\tLOG-END")
	var failures []error
	for _, r := range rows {
		current := "-"
		if r.hadCommit {
			current = fmt.Sprint(r.current)
		}
		if r.listErr != nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t-\t-\t-\n", r.topic, r.partition, current)
			failures = append(failures, fmt.Errorf("reset %s-%d: %v", r.topic, r.partition, r.listErr))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\n", r.topic, r.partition, current, r.next, r.start, r.end)
		if r.commitErrorMsg != "" {
			failures = append(failures, fmt.Errorf("commit %s-%d: %s", r.topic, r.partition, r.commitErrorMsg))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !executed {
		fmt.Fprintf(cmd.OutOrStdout(), "dry run: nothing committed for group %s (add --execute to commit)\n", group)
	} else if len(failures) == 0 {
		fmt.Fprintf(cmd.OutOrStdout(), "committed %d offsets for group %s\n", len(rows), group)
	}
	return summarizeFailures(cmd.ErrOrStderr(), failures, len(rows))
}
