package main

// `strata group reset-offsets` moves a group's committed offsets, as Kafka's
// kafka-consumer-groups --reset-offsets does, by the rules of
// internal/groupreset (which the console's reset action shares): the
// target is earliest, latest, a time, an offset or a shift from the
// current commit, always clamped to the partition's [log start, log end].
// It prints the plan and commits it only with --execute, and only while
// the group has no members (a live member would overwrite the reset with
// its next commit).

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/internal/groupreset"
)

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
			target, err := groupreset.ParseTarget(earliest, latest, datetime,
				toOffset, cmd.Flags().Changed("to-offset"), shiftBy, cmd.Flags().Changed("shift-by"))
			if err != nil {
				return err
			}
			scope, err := groupreset.ParseScope(topics, allTopics)
			if err != nil {
				return err
			}
			group := args[0]
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				rows, err := groupreset.Plan(ctx, adm, group, scope, target)
				if err != nil {
					return resetBrokerError(err)
				}
				if execute {
					if err := groupreset.Commit(ctx, adm, group, rows); err != nil {
						return resetBrokerError(err)
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

// resetBrokerError prints a step the cluster refused as the other
// commands print a broker's error.
func resetBrokerError(err error) error {
	var step *groupreset.StepError
	if errors.As(err, &step) {
		return newBrokerError(step.Op, step.Resource, step.Err, "")
	}
	return err
}

func printReset(cmd *cobra.Command, group string, rows []groupreset.Row, executed bool) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCURRENT\tNEW\tLOG-START\tLOG-END")
	var failures []error
	for _, r := range rows {
		current := "-"
		if r.HadCommit {
			current = fmt.Sprint(r.Current)
		}
		if r.ListErr != nil {
			fmt.Fprintf(tw, "%s\t%d\t%s\t-\t-\t-\n", r.Topic, r.Partition, current)
			failures = append(failures, fmt.Errorf("reset %s-%d: %v", r.Topic, r.Partition, r.ListErr))
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\n", r.Topic, r.Partition, current, r.Next, r.Start, r.End)
		if r.CommitErr != nil {
			failures = append(failures, fmt.Errorf("commit %s-%d: %s", r.Topic, r.Partition, kafkaErrorText(r.CommitErr)))
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
