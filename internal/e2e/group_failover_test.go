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

// groupFailover is a group test on three agents with one partition of
// __consumer_offsets, whose leader (every group's coordinator) is
// SIGKILLed part-way.
type groupFailover struct {
	t   *testing.T
	c   *procCluster
	ctx context.Context
}

func newGroupFailover(t *testing.T, topic string, extra ...string) *groupFailover {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil, append([]string{"--offsets-topic-partitions=1"}, extra...)...)
	c.createTopic(topic, 4, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return &groupFailover{t: t, c: c, ctx: ctx}
}

// client is a franz-go client of every agent that reconnects quickly to
// the agent that takes over.
func (f *groupFailover) client(opts ...kgo.Opt) *kgo.Client {
	return newKgo(f.t, f.c.agents[0].Addr(), append([]kgo.Opt{kgo.SeedBrokers(f.c.seeds()...),
		kgo.Dialer((&net.Dialer{Timeout: 2 * time.Second}).DialContext)}, opts...)...)
}

// emptyGroup makes group Empty with no committed offsets: a member joins
// and leaves, committing nothing.
func (f *groupFailover) emptyGroup(group string, opts ...kgo.Opt) {
	cl := f.client(append(opts, kgo.ConsumerGroup(group), kgo.DisableAutoCommit())...)
	ctx, cancel := context.WithTimeout(f.ctx, 3*time.Second)
	cl.PollFetches(ctx)
	cancel()
	cl.Close()
}

// member starts a group member that polls until the test ends.
func (f *groupFailover) member(instance string, opts ...kgo.Opt) {
	if instance != "" {
		opts = append(opts, kgo.InstanceID(instance))
	}
	cl := f.client(opts...)
	go func() {
		for f.ctx.Err() == nil {
			cl.PollFetches(f.ctx)
		}
	}()
}

// killCoordinator SIGKILLs the coordinator's agent, waits for another to
// lead its partition, and returns that agent and an admin client of the
// survivors.
func (f *groupFailover) killCoordinator() (next int, adm *kadm.Client) {
	all := []int{0, 1, 2}
	victim, _ := f.c.leaderIndex("__consumer_offsets", 0, -1, all)
	f.t.Logf("SIGKILL agent %d, the coordinator", victim)
	f.c.agents[victim].Kill()
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	next, _ = f.c.leaderIndex("__consumer_offsets", 0, victim, survivors)
	f.t.Logf("agent %d took the coordinator over", next)
	var seeds []string
	for _, i := range survivors {
		seeds = append(seeds, f.c.agents[i].Addr())
	}
	return next, kadm.NewClient(newKgo(f.t, seeds[0], kgo.SeedBrokers(seeds...)))
}

// checkListedEmpty checks that group is listed, Empty.
func (f *groupFailover) checkListedEmpty(adm *kadm.Client, group string) {
	listed, err := adm.ListGroups(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	if g, ok := listed[group]; !ok || g.State != "Empty" {
		f.t.Errorf("%s after the move: %+v, %v; want listed, Empty", group, g, ok)
	}
}

// sorted returns the members' descriptions, sorted.
func sorted[M any](members []M, describe func(M) string) []string {
	var out []string
	for _, m := range members {
		out = append(out, describe(m))
	}
	slices.Sort(out)
	return out
}

// TestGroupSurvivesCoordinatorSIGKILL (issue 29): a classic group of two
// franz-go members, one static, keeps its generation and members when
// the agent that coordinates it is SIGKILLed: the partition of
// __consumer_offsets moves to another agent, which replays the group's
// GroupMetadata record, and the members' heartbeats go on there with no
// JoinGroup. An Empty group with no committed offsets is still listed
// after the move.
func TestGroupSurvivesCoordinatorSIGKILL(t *testing.T) {
	f := newGroupFailover(t, "gsk", "--group-initial-rebalance-delay=100ms")
	f.emptyGroup("gsk-idle", kgo.ConsumeTopics("gsk"))
	joins := &requestCounter{key: int16(kmsg.JoinGroup)}
	for _, instance := range []string{"gsk-pod-0", ""} {
		f.member(instance, kgo.ConsumerGroup("gsk-live"), kgo.ConsumeTopics("gsk"), kgo.SessionTimeout(20*time.Second),
			kgo.HeartbeatInterval(300*time.Millisecond), kgo.WithHooks(joins), kgo.Balancers(kgo.CooperativeStickyBalancer()))
	}
	adm := kadm.NewClient(f.client())
	describe := func(adm *kadm.Client) kadm.DescribedGroup {
		d, err := adm.DescribeGroups(f.ctx, "gsk-live")
		g := d["gsk-live"]
		if err == nil {
			err = g.Err
		}
		if err != nil {
			g.State = err.Error() // a moving coordinator: waitFor retries
		}
		return g
	}
	ids := func(g kadm.DescribedGroup) []string {
		return sorted(g.Members, func(m kadm.DescribedGroupMember) string { return m.MemberID })
	}
	waitFor(t, "gsk-live to be Stable with two members", func() string {
		if g := describe(adm); g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Sprintf("%s with %d members", g.State, len(g.Members))
		}
		return ""
	})
	// Let the second rebalance of the cooperative protocol settle: no
	// JoinGroup for 3 s (a loaded machine delays it past a fixed pause).
	quiet := joins.n.Load()
	waitFor(t, "gsk-live's JoinGroups to stop", func() string {
		time.Sleep(3 * time.Second)
		n := joins.n.Load()
		if g := describe(adm); n != quiet || g.State != "Stable" {
			quiet = n
			return fmt.Sprintf("%d JoinGroups, %s", n, g.State)
		}
		return ""
	})
	before, joined := describe(adm), joins.n.Load()
	t.Logf("%d JoinGroups so far", joined)
	_, adm2 := f.killCoordinator()
	waitFor(t, "gsk-live on the new coordinator", func() string {
		if g := describe(adm2); g.State != "Stable" || len(g.Members) != 2 {
			return fmt.Sprintf("%s with %d members", g.State, len(g.Members))
		}
		return ""
	})
	time.Sleep(5 * time.Second) // several heartbeat intervals on the new coordinator
	if after := describe(adm2); !slices.Equal(ids(before), ids(after)) || after.State != "Stable" {
		t.Errorf("members before the kill %v, after %v (%s)", ids(before), ids(after), after.State)
	}
	if n := joins.n.Load(); n != joined {
		t.Errorf("%d JoinGroups after the coordinator moved (%d before); the members rejoined", n-joined, joined)
	}
	f.checkListedEmpty(adm2, "gsk-idle")
}

// TestConsumerGroupSurvivesCoordinatorSIGKILL (issue 29): the same for a
// KIP-848 group of two franz-go members, one static: after the
// coordinator's agent is SIGKILLed, the agent that takes the partition
// over replays the group's ConsumerGroup records, the members' heartbeats
// go on there at their epochs (no member joins it, the group epoch does
// not move), and an Empty KIP-848 group without offsets is still listed.
func TestConsumerGroupSurvivesCoordinatorSIGKILL(t *testing.T) {
	f := newGroupFailover(t, "gsk8", "--group-consumer-heartbeat-interval=300ms", "--group-consumer-session-timeout=20s")
	f.emptyGroup("gsk8-idle", kgo.ConsumeTopics("gsk8"), kgo.ServerSideBalancer())
	for _, instance := range []string{"gsk8-pod-0", ""} {
		f.member(instance, kgo.ConsumerGroup("gsk8-live"), kgo.ConsumeTopics("gsk8"), kgo.ServerSideBalancer())
	}
	adm := kadm.NewClient(f.client())
	describe := func(adm *kadm.Client) kadm.DescribedConsumerGroup {
		d, err := adm.DescribeConsumerGroups(f.ctx, "gsk8-live")
		g := d["gsk8-live"]
		if err == nil {
			err = g.Err
		}
		if err != nil {
			g.State = err.Error()
		}
		return g
	}
	members := func(g kadm.DescribedConsumerGroup) []string {
		return sorted(g.Members, func(m kadm.ConsumerGroupMember) string {
			return fmt.Sprintf("%s@%d", m.MemberID, m.MemberEpoch)
		})
	}
	var before kadm.DescribedConsumerGroup
	waitFor(t, "gsk8-live to be Stable with two members holding all 4 partitions", func() string {
		before = describe(adm)
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
	t.Logf("group epoch %d", before.Epoch)
	next, adm2 := f.killCoordinator()
	joinedLine := `msg="group member joined" component=group group=gsk8-live`
	joinsBefore := strings.Count(f.c.agents[next].Logs(), joinedLine)
	time.Sleep(5 * time.Second) // several heartbeat intervals on the new coordinator
	after := describe(adm2)
	if after.State != "Stable" || after.Epoch != before.Epoch || !slices.Equal(members(before), members(after)) {
		t.Errorf("before the kill %s at epoch %d %v; after %s at epoch %d %v", before.State, before.Epoch, members(before),
			after.State, after.Epoch, members(after))
	}
	if joins := strings.Count(f.c.agents[next].Logs(), joinedLine) - joinsBefore; joins != 0 {
		t.Errorf("%d members joined gsk8-live on the new coordinator", joins)
	}
	f.checkListedEmpty(adm2, "gsk8-idle")
}
