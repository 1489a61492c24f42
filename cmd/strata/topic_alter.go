package main

// `strata topic alter` changes a topic in two independent steps: the
// partition count (CreatePartitions, which can only grow it) and then the
// configs (IncrementalAlterConfigs, so configs not named stay as they are).
// The partition step runs first; if it fails the configs are not touched,
// so a failed command has changed at most what it printed.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newTopicAlterCmd(cf *clientFlags) *cobra.Command {
	var (
		partitions int
		sets       []string
		deletes    []string
	)
	cmd := &cobra.Command{
		Use:   "alter NAME",
		Short: "Add partitions to a topic and change its configs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			alterPartitions := cmd.Flags().Changed("partitions")
			if alterPartitions && partitions <= 0 {
				return fmt.Errorf("%w (got %d)", errBadPartitions, partitions)
			}
			ops, err := alterOps(sets, deletes)
			if err != nil {
				return err
			}
			if !alterPartitions && len(ops) == 0 {
				return errNothingToDo
			}
			return runAdmin(cmd, cf, func(ctx context.Context, adm *kadm.Client) error {
				out := cmd.OutOrStdout()
				if alterPartitions {
					resps, err := adm.UpdatePartitions(ctx, partitions, name)
					if err == nil {
						r, _ := resps.On(name, nil)
						err = newBrokerError("alter partitions of", name, r.Err, r.ErrMessage)
					} else {
						err = newBrokerError("alter partitions of", name, err, "")
					}
					if err != nil {
						return err
					}
					fmt.Fprintf(out, "topic %s now has %d partitions\n", name, partitions)
				}
				if len(ops) == 0 {
					return nil
				}
				resps, err := adm.AlterTopicConfigs(ctx, ops, name)
				if err == nil {
					r, _ := resps.On(name, nil)
					err = newBrokerError("alter configs of", name, r.Err, r.ErrMessage)
				} else {
					err = newBrokerError("alter configs of", name, err, "")
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "altered %d configs of topic %s\n", len(ops), name)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&partitions, "partitions", 0, "New total partition count; it may only grow.")
	f.StringArrayVar(&sets, "set", nil, "Set a topic config, as key=value; repeat for more.")
	f.StringArrayVar(&deletes, "delete", nil, "Remove a topic config override so the default applies again; repeat for more.")
	return cmd
}

// alterOps builds the IncrementalAlterConfigs operations for --set and
// --delete, sorted by key so the request (and any error) is deterministic.
func alterOps(sets, deletes []string) ([]kadm.AlterConfig, error) {
	setMap, err := parseKeyValues(sets)
	if err != nil {
		return nil, err
	}
	ops := make([]kadm.AlterConfig, 0, len(setMap)+len(deletes))
	for k, v := range setMap {
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
	}
	seen := make(map[string]bool, len(deletes))
	for _, k := range deletes {
		k = strings.TrimSpace(k)
		if k == "" {
			return nil, fmt.Errorf("%w (empty --delete key)", errBadKeyValue)
		}
		if _, isSet := setMap[k]; isSet || seen[k] {
			return nil, fmt.Errorf("%w: %s", errDuplicateKey, k)
		}
		seen[k] = true
		ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	return ops, nil
}
