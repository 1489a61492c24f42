package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestClusterCLI (issue 6): `strata cluster status` lists the agents with
// their replicas; `strata reassign generate` proposes a plan over the
// named agents; `strata reassign execute` moves a partition to the
// agents a plan names and `verify` reports it done; `strata agent drain 2
// --wait`, sent to agent 0, drains agent 2, which then stops by itself,
// leaving its partitions on the others.
func TestClusterCLI(t *testing.T) {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil, "--drain-timeout", "1m")
	c.createTopic("cli", 2, 2, nil)
	run := cliRunner(t, c.agents[0])

	status := run(t, "", true, "cluster", "status")
	for _, id := range []string{"0", "1", "2"} {
		if !hasRow(status, id, "") {
			t.Fatalf("cluster status lists no agent %s:\n%s", id, status)
		}
	}
	if !strings.Contains(status, "leaderless 0, under-replicated 0") {
		t.Fatalf("cluster status:\n%s", status)
	}

	generated := run(t, "", true, "reassign", "generate", "--topics", "cli", "--agents", "0,1,2")
	var gen struct {
		Partitions []struct {
			Topic     string
			Partition int32
			Replicas  []int32
		}
	}
	if err := json.Unmarshal([]byte(generated), &gen); err != nil || len(gen.Partitions) != 2 {
		t.Fatalf("reassign generate: %v\n%s", err, generated)
	}
	for _, p := range gen.Partitions {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || p.Replicas[0] > 2 || p.Replicas[1] > 2 {
			t.Fatalf("generated plan: %s", generated)
		}
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"cli","partition":0,"replicas":[2,1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run(t, "", true, "reassign", "execute", "--plan", plan); !strings.Contains(out, "cli-0: moving") {
		t.Fatalf("reassign execute: %s", out)
	}
	waitFor(t, "the move to be verified", func() string {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, testagent.Build(t), "reassign", "verify", "--plan", plan, "--bootstrap", c.agents[0].Addr()).CombinedOutput()
		if err != nil {
			return string(out)
		}
		return ""
	})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, testagent.Build(t), "agent", "drain", "2", "--http", c.agents[0].HTTPAddr(), "--wait", "--timeout", "90s").CombinedOutput()
	if err != nil {
		t.Fatalf("agent drain: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "drained") {
		t.Fatalf("agent drain: %s", out)
	}
	c.agents[2].Stop() // reaps the process; it has exited by itself
	waitFor(t, "the drained agent's partitions on the others", func() string {
		m, err := c.metadata(0, "cli")
		if err != nil {
			return err.Error()
		}
		for _, p := range m.Topics[0].Partitions {
			for _, r := range p.Replicas {
				if r == 2 {
					return fmt.Sprintf("cli-%d still on agent 2: %v", p.Partition, p.Replicas)
				}
			}
			if len(p.ISR) != 2 || p.Leader < 0 {
				return fmt.Sprintf("cli-%d: leader %d ISR %v", p.Partition, p.Leader, p.ISR)
			}
		}
		return ""
	})
}
