package agent

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupConfig is an agent whose groups rebalance quickly enough for tests.
func groupTestConfig(t *testing.T) Config {
	cfg := testConfig(t.TempDir())
	cfg.OffsetsTopicPartitions = 3
	cfg.GroupInitialRebalanceDelay = 100 * time.Millisecond
	return cfg
}

// groupConsumer is a franz-go group member, closed when the test ends.
func groupConsumer(t *testing.T, a *running, groupID, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(a.KafkaAddr().String()), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
		kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	// Polling drives the group: joins, syncs and rebalances happen as the
	// client polls.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return cl
}

// waitAssigned waits until the group is Stable with exactly members
// members whose assignments cover every partition of topic once, and
// returns the partition count of each member.
func waitAssigned(t *testing.T, adm *kadm.Client, groupID, topic string, partitions, members int) []int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		counts, problem := assignmentCounts(adm, groupID, topic, partitions, members)
		if problem == "" {
			return counts
		}
		last = problem
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("group %s never settled with %d members over %d partitions: %s", groupID, members, partitions, last)
	return nil
}

func assignmentCounts(adm *kadm.Client, groupID, topic string, partitions, members int) ([]int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	described, err := adm.DescribeGroups(ctx, groupID)
	if err != nil {
		return nil, err.Error()
	}
	g := described[groupID]
	if g.Err != nil {
		return nil, g.Err.Error()
	}
	if g.State != "Stable" || len(g.Members) != members {
		return nil, fmt.Sprintf("state %s with %d members", g.State, len(g.Members))
	}
	owners := make([]int, partitions)
	var counts []int
	for _, m := range g.Members {
		assigned, ok := m.Assigned.AsConsumer()
		if !ok {
			return nil, "assignment is not a consumer assignment"
		}
		n := 0
		for _, tp := range assigned.Topics {
			if tp.Topic != topic {
				return nil, "assignment names topic " + tp.Topic
			}
			for _, p := range tp.Partitions {
				owners[p]++
				n++
			}
		}
		counts = append(counts, n)
	}
	for p, o := range owners {
		if o != 1 {
			return nil, fmt.Sprintf("partition %d has %d owners", p, o)
		}
	}
	return counts, ""
}

// TestGroupMembersShareSevenPartitions is the consumer-group scenario: a
// 7-partition topic, consumers joining one by one; after each join every
// partition has exactly one owner, owners' counts differ by at most one,
// and with 8 members exactly one owns nothing. Once per assignor.
func TestGroupMembersShareSevenPartitions(t *testing.T) {
	balancers := map[string]kgo.GroupBalancer{
		"range":              kgo.RangeBalancer(),
		"roundrobin":         kgo.RoundRobinBalancer(),
		"cooperative-sticky": kgo.CooperativeStickyBalancer(),
	}
	for _, name := range []string{"range", "roundrobin", "cooperative-sticky"} {
		t.Run(name, func(t *testing.T) {
			a := start(t, groupTestConfig(t), nil)
			adm := kadm.NewClient(a.client(t))
			createTopic(t, a.client(t), "seven", 7, nil)
			groupID := "g-" + name
			for n := 1; n <= 8; n++ {
				groupConsumer(t, a, groupID, "seven", kgo.Balancers(balancers[name]), kgo.ClientID(fmt.Sprintf("c%d", n-1)))
				counts := waitAssigned(t, adm, groupID, "seven", 7, n)
				lo, hi := slices.Min(counts), slices.Max(counts)
				if hi-lo > 1 {
					t.Errorf("%d members: partition counts %v differ by more than one", n, counts)
				}
				idle := 0
				for _, c := range counts {
					if c == 0 {
						idle++
					}
				}
				if want := max(0, n-7); idle != want {
					t.Errorf("%d members: %d own nothing, want %d (counts %v)", n, idle, want, counts)
				}
			}
		})
	}
}
