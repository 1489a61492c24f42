// Command strata-bench is Strata's load generator: it starts or reaches the
// systems named by --target, runs the workload on each --runs times for
// each --replication-factor (alternating between systems and factors, so
// drift on a shared machine hits all of them alike; every other round runs
// the systems in reverse order), prints one JSON line
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
// and joined by gossip), "strata-security" (one agent with a PLAINTEXT and
// a SASL_SSL listener, run as two systems, strata-plaintext and
// strata-sasl-ssl, whose runs alternate), "strata-compaction" (two
// agents, one with the log cleaner and one without, as the systems
// strata-cleaner and strata-no-cleaner, for --compact runs),
// "strata-diskless" (one agent on a MinIO server process, run as two
// systems whose runs alternate: strata-classic creates each run's topic
// classic and strata-diskless creates it with diskless.enable=true), or host:port
// of any running Kafka (with --tls-ca-file, --sasl-mechanism and the like when it asks
// for them).
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
	targets := fs.StringSlice("target", []string{"kfake"}, "Systems to run against, comma-separated: kfake, kfake-inproc, jetstream, jetstream-sync, strata, strata-minio (an agent whose store is a MinIO server the harness starts), strata-cluster, strata-security (one agent's PLAINTEXT and SASL_SSL listeners, as the systems strata-plaintext and strata-sasl-ssl), strata-compaction (two agents, with the log cleaner and without, as the systems strata-cleaner and strata-no-cleaner), strata-diskless (one agent on a MinIO server the harness starts, as the systems strata-classic and strata-diskless, whose runs create classic and diskless topics), or host:port of a running Kafka.")
	var peers loadgen.PeerOptions
	fs.StringVar(&peers.BinDir, "peer-bin-dir", "", "Directory holding built kfake-server and jetstream-server binaries (built there if missing); empty builds them into a temporary directory.")
	limits := fs.Duration("limits", 0, "Before the runs, measure the machine --runs times, for about this long per limit: fdatasync'd sequential writes and 4 KiB fdatasync latency in $TMPDIR, and loopback TCP bandwidth; 0 skips it. With --target '' nothing else is run.")
	runs := fs.Int("runs", 1, "Runs per system and replication factor; with more than one, the medians are printed last.")
	warmups := fs.Int("warmup-runs", 0, "Rounds run on every system before the measured ones, their results discarded (a summary on stderr only), so that no system's first measured run pays for the systems' start (heap growth, caches); they alternate like the measured rounds.")
	factors := fs.IntSlice("replication-factor", []int{cfg.ReplicationFactor}, "Replication factors of the benchmark topic, comma-separated; each run is repeated for each, in turn.")
	var strata loadgen.StrataOptions
	fs.StringVar(&strata.Binary, "strata-bin", "", "A built strata binary for --target strata and strata-cluster; empty builds ./cmd/strata of the module in the working directory.")
	fs.StringArrayVar(&strata.Args, "strata-arg", nil, "An extra `strata agent` flag for --target strata and every agent of the other Strata targets (repeatable), e.g. --strata-arg=--log-flush=never.")
	agents := fs.Int("cluster-agents", 3, "Agents of --target strata-cluster.")
	var security loadgen.Security
	security.RegisterFlags(fs)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if err := security.Validate(); err != nil {
		return err
	}
	if security.Enabled() && !slices.ContainsFunc(*targets, func(t string) bool { return strings.Contains(t, ":") }) {
		// The harness's own targets bring their own settings.
		return fmt.Errorf("--tls*, --sasl-*: apply to host:port targets only, and --target names none")
	}
	if cfg.Diskless && slices.Contains(*targets, "strata-diskless") {
		// Its systems choose their topics' mode; --diskless would make
		// strata-classic's topics diskless too.
		return fmt.Errorf("--diskless: the strata-diskless target makes strata-diskless's topics diskless and strata-classic's classic; leave --diskless out")
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
	if *warmups < 0 {
		return fmt.Errorf("--warmup-runs %d: want 0 or more", *warmups)
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
		ts, err := startTarget(ctx, name, strata, peers, *agents, security)
		if err != nil {
			return err
		}
		started = append(started, ts...)
	}
	// Medians are per system and scenario (the scenario names the factor),
	// printed in the order the runs first came.
	var order []string
	results := map[string][]loadgen.Result{}
	enc := json.NewEncoder(os.Stdout)
	for round := range *warmups + *runs {
		// Every other round runs the systems in reverse (A B, B A, A B,
		// ...), so that no system always runs first, right after the
		// targets started, or always right after the same other system
		// and the background work its run left behind.
		turn := started
		if round%2 == 1 {
			turn = slices.Clone(started)
			slices.Reverse(turn)
		}
		for _, t := range turn {
			for _, rf := range *factors {
				c := cfg
				c.ReplicationFactor = rf
				res, err := loadgen.Run(ctx, t, c)
				if err != nil {
					return fmt.Errorf("%s: %w", t.System(), err)
				}
				if round < *warmups {
					fmt.Fprintln(os.Stderr, "warm-up, discarded:", res.Summary())
					continue
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

// startTarget starts the named target: one system, or for
// strata-security two (its agent's two listeners, plaintext first), which
// share the agent and may both be closed, or for strata-compaction two
// (the agent with the cleaner first), each closed on its own, or for
// strata-diskless two (classic topics first), which share the agent and
// its MinIO and may both be closed.
func startTarget(ctx context.Context, name string, strata loadgen.StrataOptions, peers loadgen.PeerOptions, agents int,
	security loadgen.Security) ([]loadgen.Target, error) {
	one := func(t loadgen.Target, err error) ([]loadgen.Target, error) {
		if err != nil {
			return nil, err
		}
		return []loadgen.Target{t}, nil
	}
	switch name {
	case loadgen.SystemKfake, loadgen.SystemJetStream, loadgen.SystemJetStreamSync:
		return one(loadgen.StartPeer(ctx, name, peers))
	case "kfake-inproc":
		return one(loadgen.StartKfake())
	case "strata-minio":
		return one(loadgen.StartStrataOnMinIO(ctx, strata))
	case "strata":
		return one(loadgen.StartStrata(ctx, strata))
	case "strata-cluster":
		return one(loadgen.StartStrataCluster(ctx, loadgen.StrataClusterOptions{Agents: agents,
			Binary: strata.Binary, Source: strata.Source, Args: strata.Args}))
	case "strata-security":
		s, err := loadgen.StartStrataSecurity(ctx, strata)
		if err != nil {
			return nil, err
		}
		return []loadgen.Target{s.Plaintext(), s.SASLSSL()}, nil
	case "strata-compaction":
		return loadgen.StartStrataCompaction(ctx, strata)
	case "strata-diskless":
		return loadgen.StartStrataDiskless(ctx, strata)
	}
	if !strings.Contains(name, ":") {
		return nil, fmt.Errorf("--target %q: want kfake, kfake-inproc, jetstream, jetstream-sync, strata, strata-minio, strata-cluster, strata-security, strata-compaction, strata-diskless or host:port", name)
	}
	return one(loadgen.Bootstrap{Name: name, Addrs: []string{name}, Client: security}, nil)
}
