// Command strata-bench is Strata's load generator: it starts or reaches the
// systems named by --target, runs the workload on each --runs times for
// each --replication-factor (alternating between systems and factors, so
// drift on a shared machine hits all of them alike), prints one JSON line
// per run on stdout and a one-line summary per run, then the medians per
// system and factor, on stderr.
//
//	go run ./benchmarks/cmd/strata-bench --target strata,kfake --duration 10s --runs 3
//	go run ./benchmarks/cmd/strata-bench --target strata-cluster --replication-factor 1,3 --rate 2000 --runs 3
//
// Targets: "kfake" (franz-go's in-memory fake cluster in a process of its
// own, benchmarks/cmd/kfake-server), "kfake-inproc" (the same inside the
// harness process), "jetstream" and "jetstream-sync" (NATS JetStream's file
// store with the server's defaults, and with sync_interval: always;
// benchmarks/cmd/jetstream-server), "strata" (an agent
// subprocess built from this module, or --strata-bin, in a temporary
// directory on loopback ports, stopped by PID at the end), "strata-minio"
// (the same with its store on a MinIO server process, for --mode
// catchup-store),
// "strata-cluster" (--cluster-agents such agents sharing one file:// store
// and joined by gossip), or host:port of any running Kafka.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "strata-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := loadgen.DefaultConfig()
	fs := pflag.NewFlagSet("strata-bench", pflag.ContinueOnError)
	targets := fs.StringSlice("target", []string{"kfake"}, "Systems to run against, comma-separated: kfake, kfake-inproc, jetstream, jetstream-sync, strata, strata-minio (an agent whose store is a MinIO server the harness starts), strata-cluster, or host:port of a running Kafka.")
	var peers loadgen.PeerOptions
	fs.StringVar(&peers.BinDir, "peer-bin-dir", "", "Directory holding built kfake-server and jetstream-server binaries (built there if missing); empty builds them into a temporary directory.")
	limits := fs.Duration("limits", 0, "Before the runs, measure the machine --runs times, for about this long per limit: fdatasync'd sequential writes and 4 KiB fdatasync latency in $TMPDIR, and loopback TCP bandwidth; 0 skips it. With --target '' nothing else is run.")
	runs := fs.Int("runs", 1, "Runs per system and replication factor; with more than one, the medians are printed last.")
	factors := fs.IntSlice("replication-factor", []int{cfg.ReplicationFactor}, "Replication factors of the benchmark topic, comma-separated; each run is repeated for each, in turn.")
	var strata loadgen.StrataOptions
	fs.StringVar(&strata.Binary, "strata-bin", "", "A built strata binary for --target strata and strata-cluster; empty builds ./cmd/strata of the module in the working directory.")
	fs.StringArrayVar(&strata.Args, "strata-arg", nil, "An extra `strata agent` flag for --target strata and every agent of strata-cluster (repeatable), e.g. --strata-arg=--log-flush=never.")
	agents := fs.Int("cluster-agents", 3, "Agents of --target strata-cluster.")
	cfg.RegisterFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if len(*factors) == 0 {
		return fmt.Errorf("--replication-factor: want at least one")
	}
	for _, rf := range *factors {
		c := cfg
		c.ReplicationFactor = rf
		if err := c.Validate(); err != nil {
			return err
		}
	}
	if *runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", *runs)
	}
	if *agents < 1 {
		return fmt.Errorf("--cluster-agents %d: want at least 1", *agents)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if strata.Binary == "" && slices.ContainsFunc(*targets, func(t string) bool { return strings.HasPrefix(t, "strata") }) {
		// One build for every Strata target.
		dir, err := os.MkdirTemp("", "strata-bench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if strata.Binary, err = loadgen.BuildStrata(ctx, "", dir); err != nil {
			return err
		}
	}
	for i := 0; *limits > 0 && i < *runs; i++ {
		rs, err := loadgen.Limits(ctx, os.TempDir(), *limits)
		if err != nil {
			return fmt.Errorf("limits: %w", err)
		}
		for _, r := range rs {
			if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, r.Summary())
		}
	}
	if len(*targets) == 0 {
		return nil
	}
	if peers.BinDir == "" && slices.ContainsFunc(*targets, isPeer) {
		// One build of the peers for every peer target.
		dir, err := os.MkdirTemp("", "strata-bench-peer-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		peers.BinDir = dir
	}
	if peers.BinDir != "" && slices.ContainsFunc(*targets, isPeer) {
		if err := loadgen.BuildPeers(ctx, "", peers.BinDir); err != nil {
			return err
		}
	}
	var started []loadgen.Target
	defer func() {
		for _, t := range started {
			if err := t.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "strata-bench: stop", t.System()+":", err)
			}
		}
	}()
	for _, name := range *targets {
		t, err := startTarget(ctx, name, strata, peers, *agents)
		if err != nil {
			return err
		}
		started = append(started, t)
	}
	// Medians are per system and scenario (the scenario names the factor),
	// printed in the order the runs first came.
	var order []string
	results := map[string][]loadgen.Result{}
	enc := json.NewEncoder(os.Stdout)
	for range *runs {
		for _, t := range started {
			for _, rf := range *factors {
				c := cfg
				c.ReplicationFactor = rf
				res, err := loadgen.Run(ctx, t, c)
				if err != nil {
					return fmt.Errorf("%s: %w", t.System(), err)
				}
				if err := enc.Encode(res); err != nil {
					return err
				}
				fmt.Fprintln(os.Stderr, res.Summary())
				key := res.System + " " + res.Scenario
				if _, ok := results[key]; !ok {
					order = append(order, key)
				}
				results[key] = append(results[key], res)
			}
		}
	}
	if *runs > 1 {
		for _, key := range order {
			fmt.Fprintf(os.Stderr, "median of %d: %s\n", *runs, loadgen.Median(results[key]).Summary())
		}
	}
	return nil
}

func isPeer(name string) bool {
	return name == loadgen.SystemKfake || name == loadgen.SystemJetStream || name == loadgen.SystemJetStreamSync
}

func startTarget(ctx context.Context, name string, strata loadgen.StrataOptions, peers loadgen.PeerOptions, agents int) (loadgen.Target, error) {
	switch name {
	case loadgen.SystemKfake, loadgen.SystemJetStream, loadgen.SystemJetStreamSync:
		return loadgen.StartPeer(ctx, name, peers)
	case "kfake-inproc":
		return loadgen.StartKfake()
	case "strata-minio":
		return loadgen.StartStrataOnMinIO(ctx, strata)
	case "strata":
		return loadgen.StartStrata(ctx, strata)
	case "strata-cluster":
		return loadgen.StartStrataCluster(ctx, loadgen.StrataClusterOptions{Agents: agents,
			Binary: strata.Binary, Source: strata.Source, Args: strata.Args})
	}
	if !strings.Contains(name, ":") {
		return nil, fmt.Errorf("--target %q: want kfake, kfake-inproc, jetstream, jetstream-sync, strata, strata-minio, strata-cluster or host:port", name)
	}
	return loadgen.Bootstrap{Name: name, Addrs: []string{name}}, nil
}
