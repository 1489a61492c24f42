package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testagent"
)

// TestAgentIDFromHostname (issue 31): a StatefulSet-style restart. Agent
// strata-2 runs with --agent-id-from-hostname and no --agent-id; it is
// stopped, its data directory wiped, and started again under the same host
// name: it comes back as agent 2, restores from the bucket and copies the
// tail, rejoins every ISR, and serves every record of the partition it
// leads. Another agent started with an id a live agent holds refuses to
// start and names that agent.
func TestAgentIDFromHostname(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a host name of its own needs a UTS namespace, which needs root")
	}
	minio := miniotest.Start(t)
	store := minio.StoreURL(minio.NewBucket(t), "strata")
	c := startProcCluster(t, 2, store, minio.Env())
	pod := testagent.Start(t, testagent.Options{Env: minio.Env(), Hostname: "strata-2",
		ExtraArgs: append(slices.Clone(clusterArgs), "--store", store, "--agent-id-from-hostname",
			"--join", c.agents[0].GossipAddr()+","+c.agents[1].GossipAddr())})
	c.agents = append(c.agents, pod)
	c.direct = append(c.direct, newKgo(t, pod.Addr()))
	waitFor(t, "agent 2 (strata-2) in every agent's metadata", func() string {
		for i := range c.agents {
			m, err := c.metadata(i, "")
			if err != nil {
				return err.Error()
			}
			if !slices.ContainsFunc(m.Brokers, func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == 2 && b.Port > 0 }) {
				return fmt.Sprintf("agent %d lists %d brokers", i, len(m.Brokers))
			}
		}
		return ""
	})

	const topic, partitions = "pod", 3
	c.createTopic(topic, partitions, 3, map[string]*string{"remote.storage.enable": strp("true"), "segment.bytes": strp("65536")})
	cl := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(time.Millisecond))
	prod := startProducer(t, cl, topic, partitions)
	waitFor(t, "records acknowledged", func() string {
		if n := prod.log.count(); n < 3000 {
			return fmt.Sprint(n, " acknowledged")
		}
		return ""
	})
	prod.stop()

	// The pod is rescheduled onto an empty volume.
	if err := pod.Stop(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(pod.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(pod.DataDir() + "/" + e.Name()); err != nil {
			t.Fatal(err)
		}
	}
	restarted := time.Now()
	pod.Restart(t)
	ready := time.Since(restarted)
	if n := strings.Count(pod.Logs(), "agent id from the host name"); n != 2 {
		t.Fatalf("%d starts took the agent id from the host name, want both", n)
	}
	for p := range int32(partitions) {
		waitFor(t, fmt.Sprintf("agent 2 back in the ISR of %s-%d", topic, p), func() string {
			_, _, isr, err := c.partitionState(0, topic, p)
			if err != nil || !slices.Contains(isr, 2) {
				return fmt.Sprintf("ISR %v, err %v", isr, err)
			}
			return ""
		})
	}
	inSync := time.Since(restarted)
	// Agent 2 leads the partitions it is the preferred leader of, and
	// serves them whole.
	adm := newAdmin(t, c.agents[0].Addr())
	led := preferredOf(t, c, topic, 2)
	set := kadm.TopicsSet{}
	set.Add(topic, led...)
	waitFor(t, fmt.Sprintf("agent 2 to lead %s %v", topic, led), func() string {
		// Asked again until it holds: an election is refused while the
		// preferred replica is not yet in sync on the leader.
		if _, err := adm.ElectLeaders(ctxT(t, opTimeout), kadm.ElectPreferredReplica, set); err != nil {
			return err.Error()
		}
		for _, p := range led {
			if leader, _, _, err := c.partitionState(0, topic, p); err != nil || leader != 2 {
				return fmt.Sprintf("partition %d: leader %d, err %v", p, leader, err)
			}
		}
		return ""
	})
	leading := time.Since(restarted)
	c.checkAcked(topic, partitions, prod.log)
	t.Logf("agent 2 restarted on an empty disk as strata-2: ready %v, in every ISR %v, leading partitions %v %v after its start; every one of %d acknowledged records read back",
		ready.Round(time.Millisecond), inSync.Round(time.Millisecond), led, leading.Round(time.Millisecond), prod.log.count())

	// A second agent claiming id 1, which a live agent holds, refuses.
	bin := testagent.BuildTags(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"agent", "--data-dir", t.TempDir(), "--store", store, "--agent-id", "1",
		"--kafka-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--gossip-addr", "127.0.0.1:0",
		"--join", c.agents[0].GossipAddr()}, clusterArgs...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), minio.Env()...)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "agent id 1 is held by the live agent agent-1-") {
		t.Fatalf("an agent claiming a live agent's id: err %v, output:\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "is held by") {
			t.Logf("refused: %s", line)
		}
	}
	if _, _, isr, err := c.partitionState(1, topic, 0); err != nil || len(isr) != 3 {
		t.Fatalf("after the refused start: ISR %v, err %v", isr, err)
	}
}

// preferredOf are topic's partitions whose first replica is agent id.
func preferredOf(t *testing.T, c *procCluster, topic string, id int32) []int32 {
	t.Helper()
	m, err := c.metadata(0, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, mt := range m.Topics {
		for _, p := range mt.Partitions {
			if len(p.Replicas) > 0 && p.Replicas[0] == id {
				out = append(out, p.Partition)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no partition of %s prefers agent %d", topic, id)
	}
	return out
}
