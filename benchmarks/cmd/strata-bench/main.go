// Command strata-bench is Strata's load generator: it starts or reaches the
// systems named by --target, runs the workload on each --runs times
// (alternating between systems, so drift on a shared machine hits all of
// them alike), prints one JSON line per run on stdout and a one-line summary
// per run, then the median per system, on stderr.
//
//	go run ./benchmarks/cmd/strata-bench --target strata,kfake --duration 10s --runs 3
//
// Targets: "kfake" (franz-go's in-process fake cluster), "strata" (an agent
// subprocess built from this module, or --strata-bin, in a temporary
// directory on loopback ports, stopped by PID at the end), or host:port of
// any running Kafka.
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
	targets := fs.StringSlice("target", []string{"kfake"}, "Systems to run against, comma-separated: kfake, strata, or host:port of a running Kafka.")
	runs := fs.Int("runs", 1, "Runs per system; with more than one, the median run per system is printed last.")
	var strata loadgen.StrataOptions
	fs.StringVar(&strata.Binary, "strata-bin", "", "A built strata binary for --target strata; empty builds ./cmd/strata of the module in the working directory.")
	fs.StringArrayVar(&strata.Args, "strata-arg", nil, "An extra `strata agent` flag for --target strata (repeatable), e.g. --strata-arg=--log-flush=never.")
	cfg.RegisterFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if *runs < 1 {
		return fmt.Errorf("--runs %d: want at least 1", *runs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var started []loadgen.Target
	defer func() {
		for _, t := range started {
			if err := t.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "strata-bench: stop", t.System()+":", err)
			}
		}
	}()
	for _, name := range *targets {
		t, err := startTarget(ctx, name, strata)
		if err != nil {
			return err
		}
		started = append(started, t)
	}
	results := map[string][]loadgen.Result{}
	enc := json.NewEncoder(os.Stdout)
	for range *runs {
		for _, t := range started {
			res, err := loadgen.Run(ctx, t, cfg)
			if err != nil {
				return fmt.Errorf("%s: %w", t.System(), err)
			}
			if err := enc.Encode(res); err != nil {
				return err
			}
			fmt.Fprintln(os.Stderr, res.Summary())
			results[t.System()] = append(results[t.System()], res)
		}
	}
	if *runs > 1 {
		for _, t := range started {
			m := median(results[t.System()])
			fmt.Fprintf(os.Stderr, "median of %d: %s\n", *runs, m.Summary())
		}
	}
	return nil
}

func startTarget(ctx context.Context, name string, strata loadgen.StrataOptions) (loadgen.Target, error) {
	switch name {
	case "kfake":
		return loadgen.StartKfake()
	case "strata":
		return loadgen.StartStrata(ctx, strata)
	}
	if !strings.Contains(name, ":") {
		return nil, fmt.Errorf("--target %q: want kfake, strata or host:port", name)
	}
	return loadgen.Bootstrap{Name: name, Addrs: []string{name}}, nil
}

// median is the run with the median records/s (the lower middle one for an
// even count); its latencies are that run's, not medians of their own.
func median(rs []loadgen.Result) loadgen.Result {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b loadgen.Result) int {
		switch {
		case a.RecordsPerSec < b.RecordsPerSec:
			return -1
		case a.RecordsPerSec > b.RecordsPerSec:
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}
