package main

// `strata topic` manages topics with the Kafka admin APIs: CreateTopics,
// Metadata, DeleteTopics, CreatePartitions and IncrementalAlterConfigs
// (describe is in topic_describe.go). Every subcommand prints one line per
// resource it changed on stdout and the broker's error, with its Kafka name,
// for each one it could not change; any failure makes the exit status
// non-zero.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

var (
	errBadKeyValue   = errors.New("topic: config must be key=value")
	errDuplicateKey  = errors.New("topic: config key given twice")
	errNothingToDo   = errors.New("topic alter: nothing to change (use --partitions, --set or --delete)")
	errBadPartitions = errors.New("topic: partition count must be positive")
)

func newTopicCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, alter and delete topics (works against any Kafka)",
	}
	cf.register(cmd.PersistentFlags())
	cmd.AddCommand(
		newTopicCreateCmd(&cf),
		newTopicListCmd(&cf),
		newTopicDescribeCmd(&cf),
		newTopicDeleteCmd(&cf),
		newTopicAlterCmd(&cf),
	)
	return cmd
}

// runAdmin runs fn with an admin client and a context bounded by --timeout,
// and closes the client afterwards.
func runAdmin(cmd *cobra.Command, cf *clientFlags, fn func(context.Context, *kadm.Client) error) error {
	adm, err := cf.newAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), cf.timeout)
	defer cancel()
	return fn(ctx, adm)
}

func newTopicCreateCmd(cf *clientFlags) *cobra.Command {
	var (
		partitions int32
		rf         int16
		configs    []string
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := parseKeyValues(configs)
			if err != nil {
				return err
			}
			name := args[0]
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				resp, err := adm.CreateTopic(ctx, partitions, rf, cfg, name)
				if err != nil {
					return newBrokerError("create topic", name, err, resp.ErrMessage)
				}
				// Brokers older than Kafka 2.4 do not echo the counts back.
				if resp.NumPartitions <= 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "created topic %s\n", name)
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "created topic %s (partitions %d, replication factor %d)\n",
					name, resp.NumPartitions, resp.ReplicationFactor)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.Int32Var(&partitions, "partitions", -1, "Number of partitions; -1 uses the broker's num.partitions.")
	f.Int16Var(&rf, "replication-factor", -1, "Replicas per partition; -1 uses the broker's default.replication.factor.")
	f.StringArrayVar(&configs, "config", nil, "A topic config as key=value, e.g. retention.ms=86400000; repeat for more.")
	return cmd
}

func newTopicListCmd(cf *clientFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List topics with their partition count and replication factor",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				topics, err := adm.ListTopicsWithInternal(ctx)
				if err != nil {
					return newBrokerError("list topics", "", err, "")
				}
				return printTopicList(cmd, topics, all)
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "Also list internal topics such as __consumer_offsets.")
	return cmd
}

// printTopicList writes the table for `topic list`. The replication factor
// shown is the largest replica count of any partition: during a
// reassignment partitions can briefly differ, and the larger number is the
// one the operator is moving towards or away from.
func printTopicList(cmd *cobra.Command, topics kadm.TopicDetails, all bool) error {
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPARTITIONS\tREPLICATION")
	var failures []error
	for _, t := range topics.Sorted() {
		if t.IsInternal && !all {
			continue
		}
		if t.Err != nil {
			failures = append(failures, newBrokerError("list topic", t.Topic, t.Err, ""))
			continue
		}
		rf := 0
		for _, p := range t.Partitions {
			rf = max(rf, len(p.Replicas))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\n", t.Topic, len(t.Partitions), rf)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return summarizeFailures(cmd.ErrOrStderr(), failures, len(topics))
}

func newTopicDeleteCmd(cf *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete topics and all their data",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				resps, err := adm.DeleteTopics(ctx, args...)
				if err != nil {
					return newBrokerError("delete topics", strings.Join(args, ","), err, "")
				}
				var failures []error
				for _, name := range args {
					r, ok := resps[name]
					switch {
					case !ok:
						failures = append(failures, fmt.Errorf("delete topic %s: not in the broker's response", name))
					case r.Err != nil:
						failures = append(failures, newBrokerError("delete topic", name, r.Err, r.ErrMessage))
					default:
						fmt.Fprintf(cmd.OutOrStdout(), "deleted topic %s\n", name)
					}
				}
				return summarizeFailures(cmd.ErrOrStderr(), failures, len(args))
			})
		},
	}
}

// parseKeyValues turns repeated key=value flags into the map CreateTopics
// takes. The value may itself contain '=' (only the first one splits) and
// may be empty; the key may not. A key given twice is an error rather than
// last-one-wins, because a silently dropped setting is worse than a retry.
func parseKeyValues(kvs []string) (map[string]*string, error) {
	out := make(map[string]*string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w (got %q)", errBadKeyValue, kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%w: %s", errDuplicateKey, k)
		}
		out[k] = &v
	}
	return out, nil
}
