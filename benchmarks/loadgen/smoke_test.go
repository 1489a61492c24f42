package loadgen

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"
)

// TestSmoke runs a seconds-long version of four scenarios against each
// kind of target: kfake and JetStream (peer processes built from
// benchmarks/cmd) and a Strata agent subprocess built from this module, so
// the harness cannot rot. It checks only that the output is well-formed and
// that the counts add up: speed is measured, not asserted.
func TestSmoke(t *testing.T) {
	scenarios := []Config{
		func() Config {
			c := DefaultConfig()
			c.Scenario, c.Rate, c.Duration = "paced-acks-all-1KiB", 400, time.Second
			return c
		}(),
		func() Config {
			c := DefaultConfig()
			c.Scenario, c.Mode, c.Rate, c.Duration, c.Keys, c.Partitions = "e2e-keys", ModeEndToEnd, 200, time.Second, 50, 2
			return c
		}(),
		func() Config {
			c := DefaultConfig()
			c.Scenario, c.Mode, c.Records, c.Producers, c.Acks = "catchup", ModeCatchUp, 3000, 2, "1"
			return c
		}(),
		func() Config {
			c := DefaultConfig()
			c.Scenario, c.Mode, c.Rate, c.Duration = "e2e-connections", ModeEndToEnd, 200, time.Second
			c.Connections, c.ConnectionInterval = 50, 100*time.Millisecond
			return c
		}(),
	}
	for _, system := range []string{SystemKfake, SystemJetStream, "strata"} {
		t.Run(system, func(t *testing.T) {
			t.Parallel()
			target := startTarget(t, system)
			for _, cfg := range scenarios {
				cfg.DrainTimeout = 30 * time.Second
				t.Run(cfg.Scenario, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					res, err := Run(ctx, target, cfg)
					if err != nil {
						t.Fatal(err)
					}
					t.Log(res.Summary())
					checkResult(t, cfg, res)
				})
			}
		})
	}
}

func startTarget(t *testing.T, system string) Target {
	t.Helper()
	var target Target
	var err error
	switch system {
	case SystemKfake, SystemJetStream, SystemJetStreamSync:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// The build is cached after the first run: seconds.
		target, err = StartPeer(ctx, system, PeerOptions{BinDir: t.TempDir(), DataDir: t.TempDir()})
	case "strata":
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// The build is cached after the first run: seconds.
		target, err = StartStrata(ctx, StrataOptions{Dir: t.TempDir()})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := target.Close(); err != nil {
			t.Error(err)
		}
	})
	return target
}

// checkResult: the JSON line has every field, the counts add up, and the
// numbers are consistent with each other.
func checkResult(t *testing.T, cfg Config, res Result) {
	t.Helper()
	line, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(line, &fields); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, line)
	}
	for _, k := range []string{"system", "scenario", "records_per_s", "mb_per_s", "produce_latency", "errors", "machine"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("output lacks %q: %s", k, line)
		}
	}
	if res.Errors != 0 || res.FirstError != "" {
		t.Errorf("%d errors, first: %s", res.Errors, res.FirstError)
	}
	if res.Sent != res.Acked+res.Errors {
		t.Errorf("sent %d != acked %d + errors %d", res.Sent, res.Acked, res.Errors)
	}
	want := cfg.Records
	if cfg.Records == 0 {
		// Paced for a duration: one record per slot before the deadline.
		want = int64(cfg.Duration.Seconds() * float64(cfg.Rate))
	}
	if res.Sent != want {
		t.Errorf("sent %d records, want %d", res.Sent, want)
	}
	if res.Produce.Count != uint64(res.Acked) {
		t.Errorf("produce latency counts %d records, acked %d", res.Produce.Count, res.Acked)
	}
	checkLatency(t, "produce", res.Produce)
	switch cfg.Mode {
	case ModeProduce:
		if res.EndToEnd != nil || res.Records != res.Acked {
			t.Errorf("produce run: records %d, acked %d, e2e %v", res.Records, res.Acked, res.EndToEnd)
		}
	case ModeEndToEnd:
		if res.EndToEnd == nil || res.Consumed != res.Acked || res.EndToEnd.Count != uint64(res.Consumed) {
			t.Fatalf("e2e run: consumed %d, acked %d, e2e %+v", res.Consumed, res.Acked, res.EndToEnd)
		}
		checkLatency(t, "e2e", *res.EndToEnd)
	case ModeCatchUp, ModeCatchUpStore:
		if res.Consumed != res.Acked || res.Records != res.Consumed {
			t.Errorf("catch-up run: consumed %d, acked %d, records %d", res.Consumed, res.Acked, res.Records)
		}
	}
	if res.Bytes != res.Records*int64(cfg.RecordBytes) {
		t.Errorf("bytes %d for %d records of %d", res.Bytes, res.Records, cfg.RecordBytes)
	}
	if res.Seconds <= 0 || res.RecordsPerSec <= 0 || res.MBPerSec <= 0 {
		t.Errorf("seconds %v, records/s %v, MB/s %v: want all positive", res.Seconds, res.RecordsPerSec, res.MBPerSec)
	}
	// The idle connections' requests are spread over one interval from
	// before the warm-up; a run of several intervals gets at least one
	// from each connection that stayed up (one that failed is an error).
	if res.Settings.Connections != cfg.Connections || res.IdleRequests < int64(cfg.Connections) {
		t.Errorf("%d idle connections in the output answered %d requests; want %d connections, at least one request each",
			res.Settings.Connections, res.IdleRequests, cfg.Connections)
	}
}

func checkLatency(t *testing.T, what string, l Latency) {
	t.Helper()
	if l.Count == 0 || l.P50 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max {
		t.Errorf("%s latency out of order: %+v", what, l)
	}
}

// TestStrataStopsByPID: Close ends the agent process it started and
// removes the directory it made.
func TestStrataStopsByPID(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := StartStrata(ctx, StrataOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.dir
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if s.cmd.ProcessState == nil || !s.cmd.ProcessState.Exited() {
		t.Errorf("agent pid %d: not exited after Close (%v)", s.PID(), s.cmd.ProcessState)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s left behind: %v", dir, err)
	}
}

// TestLimitsSmoke: each machine limit is measured and well-formed.
func TestLimitsSmoke(t *testing.T) {
	rs, err := Limits(context.Background(), t.TempDir(), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.Scenario)
	}
	want := []string{"limit/disk-seq-fsync-1MiB", "limit/disk-fdatasync-4KiB", "limit/disk-fdatasync-20KiB", "limit/loopback-tcp"}
	if !slices.Equal(names, want) {
		t.Fatalf("limits %q, want %q", names, want)
	}
	for _, r := range rs {
		t.Log(r.Summary())
		if r.System != SystemMachine || r.Mode != ModeLimit || r.Bytes <= 0 || r.MBPerSec <= 0 {
			t.Errorf("limit %s: %+v", r.Scenario, r)
		}
	}
}

// TestCatchUpStoreSmoke: a Strata agent on a MinIO process, a topic filled
// past a few 4 MiB segments, read from offset 0 once they are in the store
// (warm: a second time). The agent's counters must show that the timed
// read went through its remote-read path: cold, chunk cache misses
// fetched with GETs, and from the store at least every byte that was not
// in the one segment left on disk; warm, chunks found in the cache.
func TestCatchUpStoreSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata binary and starts MinIO")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	target, err := StartStrataOnMinIO(ctx, StrataOptions{Dir: t.TempDir(),
		Args: []string{"--tiering-interval=100ms", "--retention-check-interval=100ms"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := target.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, warm := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Scenario, cfg.Mode, cfg.Records, cfg.Warm, cfg.DrainTimeout = "catchup-store", ModeCatchUpStore, 15000, warm, time.Minute
		res, err := Run(ctx, target, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res.Summary())
		checkResult(t, cfg, res)
		if res.StorePuts == nil || *res.StorePuts == 0 {
			t.Errorf("no store PUTs counted: %v", res.StorePuts)
		}
		sr := res.StoreRead
		if sr == nil {
			t.Fatal("no store reads in the result")
		}
		if warm {
			if sr.CacheHits == 0 {
				t.Errorf("warm read found no chunk in the cache: %+v", *sr)
			}
			continue
		}
		// Record values are less than the batches that hold them, and at
		// most one segment per partition stayed local: the rest came
		// from the store.
		fromStore := res.Bytes - int64(cfg.Partitions)*storeSegmentBytes
		if sr.Gets == 0 || sr.CacheMisses == 0 || sr.Bytes < fromStore {
			t.Errorf("cold read of %d bytes: %+v; want GETs, cache misses and at least %d bytes from the store", res.Bytes, *sr, fromStore)
		}
	}
}

// TestIdleConnectionsHeld: idle connections to a Strata agent are open on
// the agent's side while the pool holds them (once the pool stops, the
// agent's open files fall by at least their number), each made its
// ApiVersions on opening, and the agent answered a Metadata request for
// every one the pool counted, plus the one each made on opening.
func TestIdleConnectionsHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata binary")
	}
	const n = 200
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	target := startTarget(t, "strata").(*Strata)
	topic := "idle-connections"
	base, err := clientOpts(target)
	if err != nil {
		t.Fatal(err)
	}
	if err := createTopic(ctx, base, topic, 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	kafkaRequests := func(api string) float64 {
		t.Helper()
		m, err := scrape(ctx, target.metricsAddrs())
		if err != nil {
			t.Fatal(err)
		}
		return m.sum("strata_kafka_requests_total", "api", api, "outcome", "ok")
	}
	openFiles := func() int {
		t.Helper()
		open, _, err := processFiles(target.PID())
		if err != nil {
			t.Fatal(err)
		}
		return open
	}
	versionsBefore, metadataBefore := kafkaRequests("18"), kafkaRequests("3")

	cfg := DefaultConfig()
	cfg.Connections, cfg.ConnectionInterval = n, 50*time.Millisecond
	pool, err := openIdleKafka(ctx, target, topic, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Counted while they are open, and compared with the count once they
	// are closed: the connections of createTopic's client may close in
	// between, but they only lower the second count.
	filesOpen := openFiles()
	// Wait for two rounds of requests, by count, not by the clock.
	for pool.requests.Load() < 2*n && ctx.Err() == nil {
		sleep(ctx, 10*time.Millisecond)
	}
	var res Result
	pool.stop(&res)
	if res.Errors != 0 {
		t.Fatalf("%d errors: %s", res.Errors, res.FirstError)
	}
	versions, metadata := kafkaRequests("18")-versionsBefore, kafkaRequests("3")-metadataBefore
	t.Logf("%d connections: agent had %d files open with them, %d idle requests answered; agent counted %v ApiVersions, %v Metadata",
		n, filesOpen, res.IdleRequests, versions, metadata)
	if versions != n {
		t.Errorf("agent answered %v ApiVersions, want one per connection (%d)", versions, n)
	}
	// A request the stop cut off may have been answered but not counted:
	// at most one per connection.
	if lo := float64(n + res.IdleRequests); metadata < lo || metadata > lo+n {
		t.Errorf("agent answered %v Metadata; the connections counted %d past their %d opening ones", metadata, res.IdleRequests, n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for openFiles() > filesOpen-n && time.Now().Before(deadline) {
		sleep(ctx, 50*time.Millisecond)
	}
	if files := openFiles(); files > filesOpen-n {
		t.Errorf("agent has %d files open after %d idle connections closed, %d while they were open", files, n, filesOpen)
	}
}
