package loadgen

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStrataClusterReplicated runs a short paced acks=all run against a
// three-agent cluster with a topic of replication factor 3, so the cluster
// target and the --replication-factor setting cannot rot: the records are
// acknowledged and their latencies recorded, and once they are, the
// cluster's own Metadata shows the run's topic with every partition on
// three distinct agents, all three in sync. That says the topic is
// replicated, not that each acknowledgement waited for the ISR: a build
// that acknowledged early would pass here too. The acks=all wait itself is
// tested in package agent (TestAcksAllWaitsForAStoppedFollower, and the
// ISR check at every acknowledgement of the replication tests). Close must
// then leave none of the agents' PIDs running.
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
	inspected := false
	cfg.inspect = func(ctx context.Context, topic string) {
		inspected = true
		checkReplicated(t, ctx, c.Seeds(), topic, cfg.Partitions, 3)
	}
	runCtx, runCancel := context.WithTimeout(ctx, 45*time.Second)
	defer runCancel()
	began = time.Now()
	res, err := Run(runCtx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (run took %v)", res.Summary(), time.Since(began).Round(time.Millisecond))
	checkResult(t, cfg, res)
	if res.Acked != cfg.Records {
		t.Errorf("acked %d of %d records, want all", res.Acked, cfg.Records)
	}
	if !inspected {
		t.Error("Run never showed the test its topic")
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

// checkReplicated asks the cluster, with a client of its own, for the
// topic's metadata: it has partitions partitions, each with replicas
// replicas on distinct agents of the cluster, its leader one of them, and
// all of them in sync.
func checkReplicated(t *testing.T, ctx context.Context, seeds []string, topic string, partitions, replicas int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil || len(td.Partitions) != partitions {
		t.Fatalf("topic %s in metadata: present %v, error %v, %d partitions; want %d", topic, ok, td.Err, len(td.Partitions), partitions)
	}
	agents := md.Brokers.NodeIDs()
	for _, p := range td.Partitions {
		set := map[int32]bool{}
		for _, r := range p.Replicas {
			if !slices.Contains(agents, r) {
				t.Errorf("partition %d: replica %d is not an agent of the cluster (%v)", p.Partition, r, agents)
			}
			set[r] = true
		}
		inSync := true
		for _, r := range p.ISR {
			inSync = inSync && set[r]
		}
		t.Logf("topic %s partition %d: leader %d, replicas %v, in sync %v", topic, p.Partition, p.Leader, p.Replicas, p.ISR)
		if len(p.Replicas) != replicas || len(set) != replicas || len(p.ISR) != replicas || !inSync || !set[p.Leader] {
			t.Errorf("partition %d: leader %d, replicas %v, in sync %v; want %d distinct replicas, all in sync, the leader one of them",
				p.Partition, p.Leader, p.Replicas, p.ISR, replicas)
		}
	}
}
