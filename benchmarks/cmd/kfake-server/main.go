// Command kfake-server runs franz-go's kfake, an in-memory Kafka cluster of
// one broker, on a loopback port, as a process of its own: the benchmark
// harness compares it with a Strata agent, which is a separate process too,
// so neither shares the load generator's CPU time and garbage collector.
//
// It prints one JSON line on stdout once it listens,
//
//	{"addr":"127.0.0.1:40123"}
//
// and runs until SIGTERM or SIGINT. Nothing it stores survives it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kfake-server:", err)
		os.Exit(1)
	}
}

func run() error {
	// Signals first, so a harness that stops us right after the address
	// line is not racing the handler's installation.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := json.NewEncoder(os.Stdout).Encode(struct {
		Addr string `json:"addr"`
	}{c.ListenAddrs()[0]}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
