package agent

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/topics"
)

// TestAgentsFindEachOtherByGossip: three agents sharing a store, the
// second and third joining the first by --join, each list all three in
// Metadata with their advertised addresses; one that stops leaves the
// others' lists.
func TestAgentsFindEachOtherByGossip(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "store")
	var agents []*running
	for i := range 3 {
		cfg := testConfig(filepath.Join(dir, fmt.Sprint("agent", i)))
		cfg.Store = store
		if i > 0 {
			cfg.Gossip.Join = []string{agents[0].members.Self().GossipAddr}
		}
		agents = append(agents, start(t, cfg, nil))
	}
	waitBrokers := func(a *running, want []int32) {
		t.Helper()
		cl := a.client(t)
		deadline := time.Now().Add(20 * time.Second)
		var got []int32
		for time.Now().Before(deadline) {
			// A raw request to this agent: clients cache metadata.
			m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t), cl)
			if err == nil {
				got = got[:0]
				for _, b := range m.Brokers {
					got = append(got, b.NodeID)
					if fmt.Sprintf("%s:%d", b.Host, b.Port) != agents[b.NodeID].advertisedAddr() {
						t.Fatalf("agent %d listed at %s:%d, it advertises %s", b.NodeID, b.Host, b.Port, agents[b.NodeID].advertisedAddr())
					}
				}
				slices.Sort(got)
				if slices.Equal(got, want) {
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("agent %d lists brokers %v, want %v", a.id, got, want)
	}
	for _, a := range agents {
		if a.id != int32(slices.Index(agents, a)) {
			t.Fatalf("agent ids %d: want 0, 1, 2 in start order", a.id)
		}
		waitBrokers(a, []int32{0, 1, 2})
	}
	agents[2].stop(t)
	waitBrokers(agents[0], []int32{0, 1})
	waitBrokers(agents[1], []int32{0, 1})
}

// TestTopicsOfOtherAgents: a topic created on one agent is served by
// another within moments (gossip announces it, the store has it): its
// partitions are placed on either agent, the second shows the first's as
// peers, and a client that only knows the second agent produces to and
// consumes it. Config changes and
// the deletion reach the second agent too.
func TestTopicsOfOtherAgents(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "store")
	cfg0 := testConfig(filepath.Join(dir, "agent0"))
	cfg0.Store = store
	a0 := start(t, cfg0, nil)
	cfg1 := testConfig(filepath.Join(dir, "agent1"))
	cfg1.Store = store
	cfg1.Gossip.Join = []string{a0.members.Self().GossipAddr}
	a1 := start(t, cfg1, nil)

	createTopic(t, a0.client(t), "shared", 2, nil)
	waitTopic(t, a1, "shared", func(e *topics.Entry) bool { return len(e.Snap.Partitions) == 2 })
	e, _ := a1.entry("shared")
	for _, p := range e.Snap.Partitions {
		if p.Local() != (p.Leader() == a1.id) || p.Leader() != a0.id && p.Leader() != a1.id {
			t.Fatalf("partition %d on the second agent: local %v, leader %d", p.Index(), p.Local(), p.Leader())
		}
	}
	cl := a1.client(t, kgo.DefaultProduceTopic("shared"), kgo.ConsumeTopics("shared"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte("via agent 1")}).FirstErr(); err != nil {
		t.Fatalf("produce through the second agent's metadata: %v", err)
	}
	fs := cl.PollFetches(ctxT(t))
	if fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "via agent 1" {
		t.Fatalf("consume: %d records, errors %v", fs.NumRecords(), fs.Errors())
	}

	adm := kadm.NewClient(a0.client(t))
	if _, err := adm.AlterTopicConfigs(ctxT(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}, "shared"); err != nil {
		t.Fatal(err)
	}
	waitTopic(t, a1, "shared", func(e *topics.Entry) bool { return e.Meta.Configs["retention.ms"] == "3600000" })
	if _, err := adm.DeleteTopics(ctxT(t), "shared"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := a1.entry("shared"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second agent still serves the deleted topic")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTopic waits until a serves topic in a state ok accepts.
func waitTopic(t *testing.T, a *running, topic string, ok func(*topics.Entry) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if e, found := a.entry(topic); found && ok(e) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("agent %d never served %s as expected", a.id, topic)
}
