// Command strata-hot-bench measures whether a join evens out the agents'
// load when one partition takes ten times the others' rate (issue 31,
// item 3): for each --rebalance-by mode it starts a cluster, produces,
// joins one more agent, waits for the placement to settle and reads each
// agent's measured bytes in and out per second (package
// benchmarks/rebalance, MeasureHot). It prints a Markdown table, one row
// per mode.
//
//	go run ./benchmarks/cmd/strata-hot-bench --modes load,count
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/strata-streaming/strata/benchmarks/rebalance"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "strata-hot-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := rebalance.DefaultHotConfig()
	modes := flag.String("modes", "load,count", "Comma-separated --rebalance-by modes to measure, one cluster each, in this order.")
	flag.StringVar(&cfg.Binary, "strata-bin", "", "A built strata binary; empty builds ./cmd/strata of the working directory's module.")
	flag.IntVar(&cfg.Agents, "agents", cfg.Agents, "Agents before the join; one more joins.")
	flag.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "Partitions of the topic.")
	flag.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "Replicas of each partition.")
	flag.IntVar(&cfg.RecordBytes, "record-bytes", cfg.RecordBytes, "Bytes of each record's value.")
	flag.IntVar(&cfg.ColdRate, "cold-rate", cfg.ColdRate, "Bytes a second produced to each partition but the hot one.")
	flag.IntVar(&cfg.HotFactor, "hot-factor", cfg.HotFactor, "How many times the cold rate partition 0 gets.")
	flag.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "How long the producers run before the join (the balancer trusts a replica's load after it has had its role for 60 s).")
	flag.DurationVar(&cfg.LoadReportInterval, "load-report-interval", cfg.LoadReportInterval, "The agents' --load-report-interval.")
	flag.DurationVar(&cfg.Quiet, "quiet", cfg.Quiet, "How long the placement must stay unchanged to count as settled.")
	flag.DurationVar(&cfg.SettleTimeout, "settle-timeout", cfg.SettleTimeout, "Longest wait for the settled placement.")
	flag.DurationVar(&cfg.MeasureDelay, "measure-delay", cfg.MeasureDelay, "Wait between settling and reading the agents' load, for their moving averages to follow.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var results []rebalance.HotResult
	for _, mode := range strings.Split(*modes, ",") {
		c := cfg
		c.Mode = strings.TrimSpace(mode)
		began := time.Now()
		res, err := rebalance.MeasureHot(ctx, c)
		if err != nil {
			return fmt.Errorf("--rebalance-by %s: %w", c.Mode, err)
		}
		fmt.Fprintf(os.Stderr, "%s: measured max/min %.2f (%v), planned %.2f, replicas %v, leaders %v, settled after %v, moves %v, leadership moves %v, records %d acked %d failed, load average %s, took %v\n",
			c.Mode, res.Ratio, res.Load, res.PlannedRatio, res.Replicas, res.Leaders, res.Settled.Round(time.Second), res.MovesStarted,
			res.LeadershipMoves, res.Acked, res.Failed, res.LoadAverage, time.Since(began).Round(time.Second))
		results = append(results, res)
	}
	fmt.Print(rebalance.HotTable(results))
	return nil
}
