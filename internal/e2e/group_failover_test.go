package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestCounter counts the requests of one API key a client writes.
type requestCounter struct {
	key int16
	n   atomic.Int64
}

func (h *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == h.key && err == nil {
		h.n.Add(1)
	}
}

var _ kgo.HookBrokerWrite = (*requestCounter)(nil)

// TestGroupSurvivesCoordinatorSIGKILL (issue 29): a classic group of two
// franz-go members, one static, keeps its generation and members when
// the agent that coordinates it is SIGKILLed: the partition of
// __consumer_offsets moves to another agent, which replays the group's
// GroupMetadata record, and the members' heartbeats go on there with no
// JoinGroup. An Empty group with no committed offsets is still listed
// after the move.
func TestGroupSurvivesCoordinatorSIGKILL(t *testing.T) {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil, "--offsets-topic-partitions=1",
		"--group-initial-rebalance-delay=100ms")
	c.createTopic("gsk", 4, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The Empty group: a member joins and leaves, committing nothing.
	idle := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.ConsumerGroup("gsk-idle"),
		kgo.ConsumeTopics("gsk"), kgo.DisableAutoCommit())
	pollCtx, pollCancel := context.WithTimeout(ctx, 3*time.Second)
	idle.PollFetches(pollCtx)
	pollCancel()
	idle.Close()

	joins := &requestCounter{key: int16(kmsg.JoinGroup)}
	member := func(instance string) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.ConsumerGroup("gsk-live"), kgo.ConsumeTopics("gsk"),
			kgo.SessionTimeout(20 * time.Second), kgo.HeartbeatInterval(300 * time.Millisecond),
			kgo.WithHooks(joins), kgo.Balancers(kgo.CooperativeStickyBalancer()),
			// Reconnect quickly to the agent that took over.
			kgo.Dialer((&net.Dialer{Timeout: 2 * time.Second}).DialContext)}
		if instance != "" {
			opts = append(opts, kgo.InstanceID(instance))
		}
		cl := newKgo(t, c.agents[0].Addr(), opts...)
		go func() {
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
		return cl
	}
	member("gsk-pod-0")
	member("")
	adm := kadm.NewClient(newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...)))
	var before kadm.DescribedGroup
	waitFor(t, "gsk-live to be Stable with two members", func() string {
		d, err := adm.DescribeGroups(ctx, "gsk-live")
		if err != nil {
			return err.Error()
		}
		before = d["gsk-live"]
		if before.State != "Stable" || len(before.Members) != 2 {
			return fmt.Sprintf("%s with %d members", before.State, len(before.Members))
		}
		return ""
	})
	// Let the second rebalance of the cooperative protocol settle.
	time.Sleep(2 * time.Second)
	joined := joins.n.Load()
	all := []int{0, 1, 2}
	victim, _ := c.leaderIndex("__consumer_offsets", 0, -1, all)
	t.Logf("%d JoinGroups so far; SIGKILL agent %d, the coordinator", joined, victim)
	c.agents[victim].Kill()
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	next, _ := c.leaderIndex("__consumer_offsets", 0, victim, survivors)
	t.Logf("agent %d took the coordinator over", next)
	var seeds []string
	for _, i := range survivors {
		seeds = append(seeds, c.agents[i].Addr())
	}
	adm2 := kadm.NewClient(newKgo(t, seeds[0], kgo.SeedBrokers(seeds...)))
	waitFor(t, "gsk-live on the new coordinator", func() string {
		d, err := adm2.DescribeGroups(ctx, "gsk-live")
		if err != nil {
			return err.Error()
		}
		g := d["gsk-live"]
		if g.Err != nil {
			return g.Err.Error()
		}
		if g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Sprintf("%s with %d members", g.State, len(g.Members))
		}
		return ""
	})
	// Several heartbeat intervals on the new coordinator.
	time.Sleep(5 * time.Second)
	d, err := adm2.DescribeGroups(ctx, "gsk-live")
	if err != nil {
		t.Fatal(err)
	}
	after := d["gsk-live"]
	ids := func(g kadm.DescribedGroup) []string {
		var out []string
		for _, m := range g.Members {
			out = append(out, m.MemberID)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(ids(before), ids(after)) || after.State != "Stable" {
		t.Errorf("members before the kill %v, after %v (%s)", ids(before), ids(after), after.State)
	}
	if n := joins.n.Load(); n != joined {
		t.Errorf("%d JoinGroups after the coordinator moved (%d before); the members rejoined", n-joined, joined)
	}
	listed, err := adm2.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["gsk-idle"]; !ok || g.State != "Empty" {
		t.Errorf("gsk-idle after the move: %+v, %v; want listed, Empty", g, ok)
	}
}

// TestConsumerGroupSurvivesCoordinatorSIGKILL (issue 29): the same for a
// KIP-848 group of two franz-go members, one static: after the
// coordinator's agent is SIGKILLed, the agent that takes the partition
// over replays the group's ConsumerGroup records, the members' heartbeats
// go on there at their epochs (no member joins it, the group epoch does
// not move), and an Empty KIP-848 group without offsets is still listed.
func TestConsumerGroupSurvivesCoordinatorSIGKILL(t *testing.T) {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil, "--offsets-topic-partitions=1",
		"--group-consumer-heartbeat-interval=300ms", "--group-consumer-session-timeout=20s")
	c.createTopic("gsk8", 4, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.ConsumeTopics("gsk8"), kgo.ServerSideBalancer(),
		kgo.Dialer((&net.Dialer{Timeout: 2 * time.Second}).DialContext)}

	idle := newKgo(t, c.agents[0].Addr(), append(base, kgo.ConsumerGroup("gsk8-idle"), kgo.DisableAutoCommit())...)
	pollCtx, pollCancel := context.WithTimeout(ctx, 3*time.Second)
	idle.PollFetches(pollCtx)
	pollCancel()
	idle.Close()

	for _, instance := range []string{"gsk8-pod-0", ""} {
		opts := append(slices.Clone(base), kgo.ConsumerGroup("gsk8-live"))
		if instance != "" {
			opts = append(opts, kgo.InstanceID(instance))
		}
		cl := newKgo(t, c.agents[0].Addr(), opts...)
		go func() {
			for ctx.Err() == nil {
				cl.PollFetches(ctx)
			}
		}()
	}
	adm := kadm.NewClient(newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...)))
	var before kadm.DescribedConsumerGroup
	waitFor(t, "gsk8-live to be Stable with two members holding all 4 partitions", func() string {
		d, err := adm.DescribeConsumerGroups(ctx, "gsk8-live")
		if err != nil {
			return err.Error()
		}
		before = d["gsk8-live"]
		n := 0
		for _, m := range before.Members {
			for _, ps := range m.Assignment {
				n += len(ps)
			}
		}
		if before.State != "Stable" || len(before.Members) != 2 || n != 4 {
			return fmt.Sprintf("%s with %d members holding %d partitions", before.State, len(before.Members), n)
		}
		return ""
	})
	all := []int{0, 1, 2}
	victim, _ := c.leaderIndex("__consumer_offsets", 0, -1, all)
	t.Logf("group epoch %d; SIGKILL agent %d, the coordinator", before.Epoch, victim)
	c.agents[victim].Kill()
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	next, _ := c.leaderIndex("__consumer_offsets", 0, victim, survivors)
	joinsBefore := strings.Count(c.agents[next].Logs(), `msg="group member joined" component=group group=gsk8-live`)
	var seeds []string
	for _, i := range survivors {
		seeds = append(seeds, c.agents[i].Addr())
	}
	adm2 := kadm.NewClient(newKgo(t, seeds[0], kgo.SeedBrokers(seeds...)))
	// Several heartbeat intervals on the new coordinator.
	time.Sleep(5 * time.Second)
	d, err := adm2.DescribeConsumerGroups(ctx, "gsk8-live")
	if err != nil {
		t.Fatal(err)
	}
	after := d["gsk8-live"]
	members := func(g kadm.DescribedConsumerGroup) []string {
		var out []string
		for _, m := range g.Members {
			out = append(out, fmt.Sprintf("%s@%d", m.MemberID, m.MemberEpoch))
		}
		slices.Sort(out)
		return out
	}
	if after.State != "Stable" || after.Epoch != before.Epoch || !slices.Equal(members(before), members(after)) {
		t.Errorf("before the kill %s at epoch %d %v; after %s at epoch %d %v", before.State, before.Epoch, members(before),
			after.State, after.Epoch, members(after))
	}
	if joins := strings.Count(c.agents[next].Logs(), `msg="group member joined" component=group group=gsk8-live`) - joinsBefore; joins != 0 {
		t.Errorf("%d members joined gsk8-live on the new coordinator", joins)
	}
	listed, err := adm2.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["gsk8-idle"]; !ok || g.State != "Empty" {
		t.Errorf("gsk8-idle after the move: %+v, %v; want listed, Empty", g, ok)
	}
}
