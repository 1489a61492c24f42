// Command strata-rebalance-bench measures rebalancing after a join: for
// each history size it starts a cluster, fills a tiered topic, joins one
// more agent, and reports the time until that agent holds its share of the
// replicas and the bytes it copied from leaders (package
// benchmarks/rebalance). It prints a Markdown table of medians and can
// draw them as a PNG.
//
//	go run ./benchmarks/cmd/strata-rebalance-bench --sizes 4,16,64 --runs 2 --png benchmarks/rebalance.png
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/strata-streaming/strata/benchmarks/rebalance"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "strata-rebalance-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := rebalance.DefaultConfig()
	sizes := flag.String("sizes", "4,16,64", "Comma-separated history sizes in MiB, produced to the topic before the join.")
	runs := flag.Int("runs", 2, "Measurements per history size; the table reports medians.")
	png := flag.String("png", "", "Write a plot of the medians to this PNG file; empty writes none.")
	flag.StringVar(&cfg.Binary, "strata-bin", "", "A built strata binary; empty builds ./cmd/strata of the working directory's module.")
	flag.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "Partitions of the topic.")
	flag.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "Replicas of each partition.")
	flag.DurationVar(&cfg.Confirm, "confirm", cfg.Confirm, "How long the balanced placement must hold before it counts as reached.")
	flag.IntVar(&cfg.Agents, "agents", cfg.Agents, "Agents before the join; one more joins.")
	flag.IntVar(&cfg.LoadRate, "load-rate", cfg.LoadRate, "Records a second an acks=all producer writes to the topic during the join; 0 is none.")
	flag.DurationVar(&cfg.RebalanceSettle, "rebalance-settle", cfg.RebalanceSettle, "The agents' --rebalance-settle; 0 keeps the agent's default.")
	slow := flag.Duration("trace-slower-than", 10*time.Second, "Print how the placement changed, step by step, for runs that took longer than this to rebalance.")
	flag.DurationVar(&cfg.RebalanceTimeout, "rebalance-timeout", cfg.RebalanceTimeout, "Longest wait for the balanced placement.")
	flag.Parse()
	if *runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", *runs)
	}
	var history []int64
	for _, f := range strings.Split(*sizes, ",") {
		mib, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || mib < 0 {
			return fmt.Errorf("--sizes: %q is not a size in MiB", f)
		}
		history = append(history, mib<<20)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var results [][]rebalance.Result
	for _, h := range history {
		var rs []rebalance.Result
		for i := range *runs {
			c := cfg
			c.HistoryBytes = h
			res, err := rebalance.Measure(ctx, c)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "history %d MiB run %d: rebalance %v, copied %.2f MiB, new agent %d replicas, moves %d started %d completed, tiered %v (local %.2f MiB, store %.2f MiB), load %d acked %d failed %v\n",
				h>>20, i+1, res.Rebalance.Round(time.Millisecond), mib(res.CopiedBytes), res.Replicas, res.MovesStarted, res.MovesCompleted,
				res.TieringSettled, mib(res.LocalBytes), mib(res.RemoteBytes), res.LoadAcked, res.LoadFailed, res.LoadErr)
			if res.Rebalance > *slow {
				fmt.Fprintln(os.Stderr, rebalance.Trace(res.Trace))
			}
			rs = append(rs, res)
		}
		results = append(results, rs)
	}
	summary := rebalance.Summarize(results)
	fmt.Print(rebalance.Table(summary))
	if *png != "" {
		if err := rebalance.Plot(summary, *png); err != nil {
			return err
		}
	}
	return nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
