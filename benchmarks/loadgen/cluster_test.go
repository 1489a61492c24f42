package loadgen

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestStrataClusterReplicated runs a short paced acks=all run against a
// three-agent cluster with a topic of replication factor 3, so the cluster
// target and the --replication-factor setting cannot rot: the records are
// acknowledged (by every in-sync replica) and their latencies recorded.
// Close must then leave none of the agents' PIDs running.
func TestStrataClusterReplicated(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the strata binary and starts three agents")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	// The build is cached after the first run: seconds.
	c, err := StartStrataCluster(ctx, StrataClusterOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("cluster of %d agents (pids %v) ready after %v", len(pids), pids, time.Since(began).Round(time.Millisecond))
	if len(c.Seeds()) != 3 {
		t.Fatalf("seeds %v: want 3", c.Seeds())
	}

	cfg := DefaultConfig()
	cfg.Scenario, cfg.Rate, cfg.Records, cfg.ReplicationFactor = "paced-acks-all-rf3", 1000, 200, 3
	cfg.DrainTimeout = 20 * time.Second
	runCtx, runCancel := context.WithTimeout(ctx, 45*time.Second)
	defer runCancel()
	began = time.Now()
	res, err := Run(runCtx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (run took %v)", res.Summary(), time.Since(began).Round(time.Millisecond))
	checkResult(t, cfg, res)
	if res.Acked != cfg.Records || res.Settings.Replication != 3 {
		t.Errorf("acked %d of %d records, replication factor %d in the output; want all, 3", res.Acked, cfg.Records, res.Settings.Replication)
	}

	began = time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v", time.Since(began).Round(time.Millisecond))
	for i, s := range c.agents {
		// Close returns only after waiting for each process it started.
		if s.cmd.ProcessState == nil {
			t.Errorf("agent %d (pid %d): not waited for after Close", i, pids[i])
		}
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := os.Stat(c.dir); err != nil {
		t.Errorf("Close removed %s, which the test made: %v", c.dir, err)
	}
}
