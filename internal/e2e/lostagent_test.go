package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/miniotest"
)

// replaceAfter is --replace-dead-agent-after in the lost-agent test.
const replaceAfter = 30 * time.Second

// TestLostAgentReplaced (issue 31): four agents on MinIO, an acks=all
// producer running; one agent is SIGKILLed and never restarted. After
// --replace-dead-agent-after every partition of an RF 3 topic has three
// replicas, all in sync, on the three survivors (within two minutes of
// that), and every acknowledged record reads back. A tiered RF 1 topic
// that allows unclean leader election gets its lost partitions back
// online on a survivor; an RF 1 topic that does not stays offline.
func TestLostAgentReplaced(t *testing.T) {
	minio := miniotest.Start(t)
	c := startProcCluster(t, 4, minio.StoreURL(minio.NewBucket(t), "strata"), minio.Env(),
		"--replace-dead-agent-after", replaceAfter.String(), "--rebalance-settle", "5s")
	const topic, partitions = "lost", 12
	c.createTopic(topic, partitions, 3, nil)
	c.createTopic("lost-unclean", 4, 1, map[string]*string{"unclean.leader.election.enable": strp("true"), "remote.storage.enable": strp("true")})
	c.createTopic("lost-clean", 4, 1, nil)

	cl := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1<<20), kgo.RecordDeliveryTimeout(3*time.Minute),
		kgo.ProducerLinger(time.Millisecond))
	prod := startProducer(t, cl, topic, partitions)
	waitFor(t, "records acknowledged before the kill", func() string {
		if n := prod.log.count(); n < 1000 {
			return fmt.Sprint(n, " acknowledged")
		}
		return ""
	})
	const victim = 3
	onVictim := partitionsOn(t, c, 0, topic, victim)
	uncleanLost := partitionsOn(t, c, 0, "lost-unclean", victim)
	cleanLost := partitionsOn(t, c, 0, "lost-clean", victim)
	c.agents[victim].Kill()
	killed := time.Now()
	survivors := []int{0, 1, 2}

	// Replicas stay put through the grace: a restart would find them.
	time.Sleep(replaceAfter / 2)
	if msg := stillOn(t, c, topic, onVictim, victim); msg != "" {
		t.Fatalf("moved off agent %d %v after it died, before --replace-dead-agent-after (%v): %s", victim, time.Since(killed).Round(time.Second), replaceAfter, msg)
	}
	deadline := killed.Add(replaceAfter + 2*time.Minute)
	var healed time.Duration
	for {
		msg := fullOn(c, topic, partitions, 3, survivors)
		if msg == "" {
			healed = time.Since(killed)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healed %v after the kill (%v after it counted as lost): %s", time.Since(killed).Round(time.Second), time.Since(killed)-replaceAfter, msg)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("agent %d killed; every partition of %s had RF 3 and a full ISR on agents %v %v after the kill (%v after --replace-dead-agent-after)",
		victim, topic, survivors, healed.Round(100*time.Millisecond), (healed - replaceAfter).Round(100*time.Millisecond))
	before := prod.log.count()
	waitFor(t, "records acknowledged after the replacement", func() string {
		if n := prod.log.count(); n < before+500 {
			return fmt.Sprint(n-before, " acknowledged since")
		}
		return ""
	})
	prod.stop()
	if len(prod.log.errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(prod.log.errs), prod.log.errs[0])
	}
	c.checkAcked(topic, partitions, prod.log)
	t.Logf("%d records acknowledged, every one read back", prod.log.count())

	// The unclean topic's lost partitions lead on a survivor again and take
	// records; the other RF 1 topic's stay on the lost agent.
	waitFor(t, "the unclean topic's lost partitions to be led by survivors", func() string {
		for _, p := range uncleanLost {
			leader, _, isr, err := c.partitionState(0, "lost-unclean", p)
			if err != nil || leader < 0 || leader == victim || len(isr) != 1 {
				return fmt.Sprintf("partition %d: leader %d ISR %v err %v", p, leader, isr, err)
			}
		}
		return ""
	})
	for _, p := range uncleanLost {
		r := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: "lost-unclean", Partition: p, Value: []byte("after")})
		if err := r.FirstErr(); err != nil {
			t.Fatalf("produce to lost-unclean-%d after its replacement: %v", p, err)
		}
	}
	for _, p := range cleanLost {
		if leader, _, _, err := c.partitionState(0, "lost-clean", p); err != nil || leader != victim && leader >= 0 {
			t.Fatalf("lost-clean-%d (no unclean election) moved to agent %d (err %v); it must wait for its agent", p, leader, err)
		}
	}
	t.Logf("unclean topic: partitions %v led by survivors; clean topic: partitions %v wait for agent %d", uncleanLost, cleanLost, victim)

	// The lost agent comes back: it drops its copies of the replicas that
	// moved, and serves the partition that waited for it.
	c.agents[victim].Restart(t)
	if n, want := strings.Count(c.agents[victim].Logs(), "the replica moved to other agents while this agent was away"), len(onVictim)+len(uncleanLost); n != want {
		t.Fatalf("agent %d removed %d partition directories at its restart, want %d (its moved replicas)", victim, n, want)
	}
	for _, p := range cleanLost {
		r := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: "lost-clean", Partition: p, Value: []byte("back")})
		if err := r.FirstErr(); err != nil {
			t.Fatalf("produce to lost-clean-%d after agent %d came back: %v", p, victim, err)
		}
	}
}

// partitionsOn are topic's partitions with a replica on agent id, as agent
// i reports them.
func partitionsOn(t *testing.T, c *procCluster, i int, topic string, id int32) []int32 {
	t.Helper()
	m, err := c.metadata(i, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, mt := range m.Topics {
		for _, p := range mt.Partitions {
			if slices.Contains(p.Replicas, id) {
				out = append(out, p.Partition)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no partition on agent %d", topic, id)
	}
	return out
}

// stillOn is "" when agent 0 still places every partition of parts on
// agent id and moves none of them.
func stillOn(t *testing.T, c *procCluster, topic string, parts []int32, id int32) string {
	t.Helper()
	m, err := c.metadata(0, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range m.Topics {
		for _, p := range mt.Partitions {
			if slices.Contains(parts, p.Partition) && (!slices.Contains(p.Replicas, id) || len(p.Replicas) > 3) {
				return fmt.Sprintf("partition %d: replicas %v", p.Partition, p.Replicas)
			}
		}
	}
	return ""
}

// fullOn is "" when every agent in on reports every partition of topic
// with rf replicas, all of them in on and all in sync.
func fullOn(c *procCluster, topic string, partitions int32, rf int, on []int) string {
	for _, i := range on {
		m, err := c.metadata(i, topic)
		if err != nil {
			return fmt.Sprintf("agent %d: %v", i, err)
		}
		for _, mt := range m.Topics {
			if len(mt.Partitions) != int(partitions) {
				return fmt.Sprintf("agent %d lists %d partitions", i, len(mt.Partitions))
			}
			for _, p := range mt.Partitions {
				if len(p.Replicas) != rf || len(p.ISR) != rf {
					return fmt.Sprintf("agent %d: partition %d replicas %v ISR %v", i, p.Partition, p.Replicas, p.ISR)
				}
				for _, r := range p.Replicas {
					if !slices.Contains(on, int(r)) {
						return fmt.Sprintf("agent %d: partition %d replicas %v include agent %d", i, p.Partition, p.Replicas, r)
					}
				}
			}
		}
	}
	return ""
}
