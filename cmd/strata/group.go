package main

// `strata group` inspects and manages consumer groups with the Kafka admin
// APIs: ListGroups, DescribeGroups with OffsetFetch and ListOffsets (the
// lag), DeleteGroups, and OffsetCommit for reset-offsets
// (group_reset.go). Like the topic commands it is a plain Kafka client.

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/agent/console"
)

func newGroupCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List, describe (members, assignments, lag), delete consumer groups and reset their offsets",
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(newGroupListCmd(&cf), newGroupDescribeCmd(&cf), newGroupDeleteCmd(&cf), newGroupResetCmd(&cf))
	return cmd
}

func newGroupListCmd(cf *clientFlags) *cobra.Command {
	var states []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List groups with their type (classic or consumer, KIP-848) and state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				groups, err := adm.ListGroups(ctx, states...)
				if err != nil {
					return newBrokerError("list groups", "", err, "")
				}
				return printGroupList(cmd, groups)
			})
		},
	}
	cmd.Flags().StringArrayVar(&states, "state", nil, "Only groups in this state (Empty, Stable, PreparingRebalance, Reconciling, ...); repeat for more.")
	return cmd
}

func printGroupList(cmd *cobra.Command, groups kadm.ListedGroups) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTYPE\tSTATE\tPROTOCOL-TYPE\tCOORDINATOR")
	for _, g := range groups.Sorted() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", g.Group, orDash(g.GroupType), orDash(g.State), orDash(g.ProtocolType), g.Coordinator)
	}
	return tw.Flush()
}

func newGroupDescribeCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show a group's state, members with their partitions, and committed offset, end and lag per partition",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				lags, err := adm.Lag(ctx, args...)
				if err != nil {
					return newBrokerError("describe groups", strings.Join(args, ","), err, "")
				}
				var failures []error
				for i, name := range args {
					if i > 0 {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					l, ok := lags[name]
					switch {
					case !ok:
						failures = append(failures, fmt.Errorf("describe group %s: not in the broker's response", name))
					case l.Error() != nil:
						failures = append(failures, newBrokerError("describe group", name, l.Error(), ""))
					case l.State == "Dead" && len(l.Lag) == 0:
						// Kafka answers an unknown group with state Dead.
						failures = append(failures, fmt.Errorf("describe group %s: no such group", name))
					default:
						if err := printGroupLag(cmd, l); err != nil {
							return err
						}
					}
				}
				return summarizeFailures(cmd.ErrOrStderr(), failures, len(args))
			})
		},
	}
}

// printGroupLag writes one group: a header, its members and what each is
// assigned, then one row per partition the group is assigned or has
// committed, with its committed offset, the log end and the lag.
func printGroupLag(cmd *cobra.Command, l kadm.DescribedGroupLag) error {
	w := cmd.OutOrStdout()
	protocol := l.ProtocolType
	if l.Protocol != "" {
		protocol += "/" + l.Protocol
	}
	fmt.Fprintf(w, "Group: %s  State: %s  Protocol: %s  Coordinator: %d  Members: %d\n",
		l.Group, l.State, orDash(protocol), l.Coordinator.NodeID, len(l.Members))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(l.Members) > 0 {
		fmt.Fprintln(tw, "MEMBER\tINSTANCE\tCLIENT\tHOST\tASSIGNED")
		for _, m := range l.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, orDash(deref(m.InstanceID)), orDash(m.ClientID), orDash(m.ClientHost), assignedText(m))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tMEMBER")
	for _, ml := range l.Lag.Sorted() {
		committed, end, lag, member := "-", "-", "-", "-"
		if ml.Commit.At >= 0 && ml.Commit.Topic != "" {
			committed = fmt.Sprint(ml.Commit.At)
		}
		if ml.End.Err == nil {
			end = fmt.Sprint(ml.End.Offset)
		}
		if ml.Lag >= 0 {
			lag = fmt.Sprint(ml.Lag)
		}
		if ml.Member != nil {
			member = ml.Member.MemberID
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", ml.Topic, ml.Partition, committed, end, lag, member)
	}
	return tw.Flush()
}

// assignedText renders a member's assignment as topic:p,p topic:p.
func assignedText(m kadm.DescribedGroupMember) string { return orDash(console.AssignedText(m)) }

func newGroupDeleteCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP...",
		Short: "Delete groups without members, with their committed offsets",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteGroups(ctx, args...)
				if err != nil {
					return newBrokerError("delete groups", strings.Join(args, ","), err, "")
				}
				var failures []error
				for _, name := range args {
					r, ok := resps[name]
					switch {
					case !ok:
						failures = append(failures, fmt.Errorf("delete group %s: not in the broker's response", name))
					case r.Err != nil:
						failures = append(failures, newBrokerError("delete group", name, r.Err, ""))
					default:
						fmt.Fprintf(cmd.OutOrStdout(), "deleted group %s\n", name)
					}
				}
				return summarizeFailures(cmd.ErrOrStderr(), failures, len(args))
			})
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
