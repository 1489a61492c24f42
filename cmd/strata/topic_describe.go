package main

// `strata topic describe` joins three admin answers per topic: Metadata
// (leader, epoch, replicas, ISR), ListOffsets for the earliest and latest
// offsets (log start and high watermark), and DescribeConfigs. Metadata is
// asked first so that the other two are sent only for topics that exist;
// that keeps a typo in one name from failing the whole request.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newTopicDescribeCmd(cf *clientFlags) *cobra.Command {
	var allConfigs bool
	cmd := &cobra.Command{
		Use:   "describe NAME...",
		Short: "Show each partition's leader, replicas, ISR and offsets, and the topic's configs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				return describeTopics(ctx, cmd, adm, args, allConfigs)
			})
		},
	}
	cmd.Flags().BoolVar(&allConfigs, "all-configs", false,
		"Show every config with where its value comes from, not only the topic's own overrides.")
	return cmd
}

func describeTopics(ctx context.Context, cmd *cobra.Command, adm *kadm.Client, names []string, allConfigs bool) error {
	topics, err := adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return newBrokerError("describe topics", strings.Join(names, ","), err, "")
	}
	var failures []error
	var found []string
	for _, name := range names {
		td, ok := topics[name]
		switch {
		case !ok:
			failures = append(failures, fmt.Errorf("describe topic %s: not in the broker's response", name))
		case td.Err != nil:
			failures = append(failures, newBrokerError("describe topic", name, td.Err, ""))
		default:
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return summarizeFailures(cmd.ErrOrStderr(), failures, len(names))
	}
	// A failed offset or config lookup still leaves the metadata worth
	// printing, so these errors are reported per topic instead of aborting.
	starts, startErr := adm.ListStartOffsets(ctx, found...)
	ends, endErr := adm.ListEndOffsets(ctx, found...)
	configs, cfgErr := adm.DescribeTopicConfigs(ctx, found...)
	for _, e := range []struct {
		op  string
		err error
	}{{"list start offsets", startErr}, {"list end offsets", endErr}, {"describe configs", cfgErr}} {
		if e.err != nil {
			failures = append(failures, newBrokerError(e.op, strings.Join(found, ","), e.err, ""))
		}
	}
	out := cmd.OutOrStdout()
	for i, name := range found {
		if i > 0 {
			fmt.Fprintln(out)
		}
		var rc *kadm.ResourceConfig
		if r, err := configs.On(name, nil); err == nil {
			rc = &r
		}
		errs, err := renderTopicDescription(out, topics[name], starts, ends, rc, allConfigs)
		if err != nil {
			return err
		}
		failures = append(failures, errs...)
	}
	return summarizeFailures(cmd.ErrOrStderr(), failures, max(len(names), len(failures)))
}

// renderTopicDescription writes one topic's block. It returns the broker
// errors it met (a partition without a leader, a failed offset lookup) so the
// command can exit non-zero, and separately any error writing to w.
func renderTopicDescription(w io.Writer, td kadm.TopicDetail, starts, ends kadm.ListedOffsets,
	rc *kadm.ResourceConfig, allConfigs bool) ([]error, error) {
	var failures []error
	parts := td.Partitions.Sorted()
	rf := 0
	for _, p := range parts {
		rf = max(rf, len(p.Replicas))
	}
	head := fmt.Sprintf("Topic: %s  Partitions: %d  Replication: %d", td.Topic, len(parts), rf)
	if td.ID != (kadm.TopicID{}) {
		head += "  ID: " + td.ID.String()
	}
	if td.IsInternal {
		head += "  (internal)"
	}
	if isDiskless(rc) {
		head += "  diskless"
	}
	fmt.Fprintln(w, head)
	cfg := renderConfigs(rc, allConfigs)
	if !strings.HasPrefix(cfg, "\n") {
		cfg = " " + cfg
	}
	fmt.Fprintln(w, "  Configs:"+cfg)
	if rc != nil && rc.Err != nil {
		failures = append(failures, newBrokerError("describe configs of", td.Topic, rc.Err, rc.ErrMessage))
	}

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PARTITION\tLEADER\tEPOCH\tREPLICAS\tISR\tOFFLINE\tLOG-START\tEND\tERROR")
	for _, p := range parts {
		var problems []string
		if p.Err != nil {
			problems = append(problems, kafkaErrorText(p.Err))
			failures = append(failures, newBrokerError("partition", fmt.Sprintf("%s/%d", td.Topic, p.Partition), p.Err, ""))
		}
		offset := func(l kadm.ListedOffsets) string {
			o, ok := l.Lookup(td.Topic, p.Partition)
			switch {
			case !ok:
				return "?"
			case o.Err != nil:
				problems = append(problems, kafkaErrorText(o.Err))
				failures = append(failures, newBrokerError("list offsets of", fmt.Sprintf("%s/%d", td.Topic, p.Partition), o.Err, ""))
				return "?"
			}
			return strconv.FormatInt(o.Offset, 10)
		}
		start, end := offset(starts), offset(ends)
		problem := "-"
		if len(problems) > 0 {
			problem = strings.Join(slices.Compact(problems), "; ")
		}
		fmt.Fprintf(tw, "  %d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Partition, p.Leader, p.LeaderEpoch,
			joinIDs(p.Replicas), joinIDs(p.ISR), joinIDs(p.OfflineReplicas), start, end, problem)
	}
	return failures, tw.Flush()
}

// isDiskless reports whether the described configs say diskless.enable=true
// (docs/design.md §7a): the topic's partitions then have no replicas.
func isDiskless(rc *kadm.ResourceConfig) bool {
	if rc == nil {
		return false
	}
	for _, c := range rc.Configs {
		if c.Key == "diskless.enable" {
			return strings.EqualFold(c.MaybeValue(), "true")
		}
	}
	return false
}

// renderConfigs lists the topic's own overrides (source DYNAMIC_TOPIC_CONFIG)
// as sorted key=value pairs, or with allConfigs every config and its source.
// Sensitive values are never printed, even when the broker sends them.
func renderConfigs(rc *kadm.ResourceConfig, allConfigs bool) string {
	if rc == nil {
		return "(unavailable)"
	}
	var out []string
	for _, c := range rc.Configs {
		if !allConfigs && c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			continue
		}
		v := c.MaybeValue()
		if c.Sensitive {
			v = "(sensitive)"
		}
		s := c.Key + "=" + v
		if allConfigs {
			s += " (" + c.Source.String() + ")"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "(none)"
	}
	slices.Sort(out)
	if allConfigs {
		// One per line: with sources attached a single line is unreadable.
		return "\n    " + strings.Join(out, "\n    ")
	}
	return strings.Join(out, " ")
}

func joinIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}
