// Command strata is the one Strata binary: `strata agent` runs an agent, and
// the other subcommands are Kafka clients (they work against any Kafka).
// Nothing here holds logic: flags become configs, configs become components.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "strata:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "strata",
		Short:         "Strata: a Kafka-compatible streaming service that keeps its log in object storage",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newAgentCmd(), newTopicCmd(), newProduceCmd(), newConsumeCmd(), newGroupCmd(), newTieringCmd(), newVerifyCmd(), newClusterCmd(), newReassignCmd(), newUserCmd(), newACLCmd(), newQuotaCmd())
	return root
}
