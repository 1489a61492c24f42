// Command jetstream-server runs a NATS server with JetStream and its file
// store, embedded from github.com/nats-io/nats-server/v2, on a loopback
// port, as the benchmark harness's durable peer.
//
//	jetstream-server --store-dir DIR            # the server's defaults
//	jetstream-server --store-dir DIR --sync-always
//
// --sync-always is the configuration file's `sync_interval: always`: the
// file store syncs every write before it acknowledges it. Without it the
// store syncs on its default interval, so an acknowledged message may be
// only in the page cache. Nothing else is changed from the defaults.
//
// It prints one JSON line on stdout once it accepts clients,
//
//	{"addr":"nats://127.0.0.1:40123"}
//
// and runs until SIGTERM or SIGINT, then shuts the server down.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "jetstream-server:", err)
		os.Exit(1)
	}
}

// readyTimeout bounds the wait for the server to accept clients.
const readyTimeout = 30 * time.Second

func run() error {
	storeDir := flag.String("store-dir", "", "Directory of JetStream's file store (required).")
	syncAlways := flag.Bool("sync-always", false, "Sync every write before acknowledging it, as `sync_interval: always` does.")
	flag.Parse()
	if *storeDir == "" {
		return errors.New("--store-dir: required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	opts := &server.Options{
		ServerName: "strata-bench-peer",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   *storeDir,
		SyncAlways: *syncAlways,
		NoSigs:     true, // the signals are ours, handled above
		NoLog:      true,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	s.Start()
	defer func() {
		s.Shutdown()
		s.WaitForShutdown()
	}()
	if !s.ReadyForConnections(readyTimeout) {
		return fmt.Errorf("server not ready within %v", readyTimeout)
	}
	if err := json.NewEncoder(os.Stdout).Encode(struct {
		Addr string `json:"addr"`
	}{s.ClientURL()}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
