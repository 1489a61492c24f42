package agent

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// groupTestConfig is an agent whose groups rebalance quickly enough for tests.
func groupTestConfig(t *testing.T) Config {
	cfg := testConfig(t.TempDir())
	cfg.OffsetsTopicPartitions = 3
	cfg.GroupInitialRebalanceDelay = 100 * time.Millisecond
	cfg.GroupConsumerHeartbeatInterval = 100 * time.Millisecond
	cfg.GroupConsumerSessionTimeout = 6 * time.Second
	return cfg
}

// groupConsumer is a franz-go group member, closed when the test ends.
func groupConsumer(t *testing.T, a *running, groupID, topic string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, _ := stoppableConsumer(t, a, groupID, topic, opts...)
	return cl
}

// stoppableConsumer is groupConsumer with a function that stops polling
// and closes the client early (a static member then does not leave).
func stoppableConsumer(t *testing.T, a *running, groupID, topic string, opts ...kgo.Opt) (*kgo.Client, func()) {
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
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done; cl.Close() }) }
	t.Cleanup(stop)
	return cl, stop
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
// and with 8 members exactly one owns nothing. Once per client-side
// assignor of the classic protocol, and once per server-side assignor of
// KIP-848 (franz-go asks for "uniform" with its sticky balancer and for
// "range" with its range balancer).
func TestGroupMembersShareSevenPartitions(t *testing.T) {
	runs := []struct {
		name string
		opts []kgo.Opt
	}{
		{"range", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"roundrobin", []kgo.Opt{kgo.Balancers(kgo.RoundRobinBalancer())}},
		{"cooperative-sticky", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
		{"kip848-uniform", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ServerSideBalancer()}},
		{"kip848-range", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			a := start(t, groupTestConfig(t), nil)
			adm := kadm.NewClient(a.client(t))
			createTopic(t, a.client(t), "seven", 7, nil)
			groupID := "g-" + run.name
			for n := 1; n <= 8; n++ {
				groupConsumer(t, a, groupID, "seven", append(run.opts, kgo.ClientID(fmt.Sprintf("c%d", n-1)))...)
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
			if strings.HasPrefix(run.name, "kip848") {
				// Kafka 3.0's versions (the test client's) lack the API.
				latest := kadm.NewClient(a.client(t, kgo.MaxVersions(kversion.Stable())))
				checkConsumerGroupDescribe(t, latest, groupID, strings.TrimPrefix(run.name, "kip848-"), 8)
			}
		})
	}
}

// checkConsumerGroupDescribe checks a KIP-848 group through
// ConsumerGroupDescribe: its assignor, and members that are all at the
// assignment epoch with their target reached.
func checkConsumerGroupDescribe(t *testing.T, adm *kadm.Client, groupID, assignor string, members int) {
	t.Helper()
	described, err := adm.DescribeConsumerGroups(ctxT(t), groupID)
	if err != nil {
		t.Fatal(err)
	}
	g := described[groupID]
	if g.Err != nil || g.State != "Stable" || g.AssignorName != assignor || len(g.Members) != members {
		t.Fatalf("ConsumerGroupDescribe: err %v, state %s, assignor %s, %d members", g.Err, g.State, g.AssignorName, len(g.Members))
	}
	for _, m := range g.Members {
		if m.MemberEpoch != g.AssignmentEpoch || !reflect.DeepEqual(m.Assignment, m.TargetAssignment) {
			t.Errorf("member %s: epoch %d (group at %d), assignment %v, target %v", m.MemberID, m.MemberEpoch, g.AssignmentEpoch, m.Assignment, m.TargetAssignment)
		}
	}
}

// generation is the group's generation as its coordinator holds it.
func generation(t *testing.T, a *running, groupID string) int32 {
	t.Helper()
	c, err := a.coords.GroupCoordinator(ctxT(t), groupID)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := c.Describe(groupID)
	if err != nil {
		t.Fatal(err)
	}
	return d.Generation
}

// memberPartitions returns the partitions assigned to the member with
// instanceID, from DescribeGroups.
func memberPartitions(t *testing.T, adm *kadm.Client, groupID, instanceID string) (string, []int32) {
	t.Helper()
	described, err := adm.DescribeGroups(ctxT(t), groupID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range described[groupID].Members {
		if m.InstanceID != nil && *m.InstanceID == instanceID {
			assigned, _ := m.Assigned.AsConsumer()
			var ps []int32
			for _, tp := range assigned.Topics {
				ps = append(ps, tp.Partitions...)
			}
			slices.Sort(ps)
			return m.MemberID, ps
		}
	}
	t.Fatalf("no member with instance id %s", instanceID)
	return "", nil
}

// TestStaticMemberAndSessionTimeout: a static member that restarts within
// its session timeout gets its partitions back without a rebalance (the
// other member is not reassigned); one that does not come back is removed
// after the session timeout and its partitions go to the survivor.
func TestStaticMemberAndSessionTimeout(t *testing.T) {
	a := start(t, groupTestConfig(t), nil)
	adm := kadm.NewClient(a.client(t))
	createTopic(t, a.client(t), "seven", 7, nil)
	var assignedToI0, i0Generation atomic.Int32
	groupConsumer(t, a, "static", "seven", kgo.InstanceID("i0"), kgo.Balancers(kgo.RangeBalancer()),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, _ map[string][]int32) {
			assignedToI0.Add(1)
			_, g := cl.GroupMetadata()
			i0Generation.Store(g)
		}))
	_, stop1 := stoppableConsumer(t, a, "static", "seven", kgo.InstanceID("i1"), kgo.Balancers(kgo.RangeBalancer()))
	waitAssigned(t, adm, "static", "seven", 7, 2)
	oldID, oldParts := memberPartitions(t, adm, "static", "i1")
	generationBefore := generation(t, a, "static")
	// i0's client runs its callback after the coordinator has the group
	// Stable: count from the callback of the current generation, so that a
	// late one (under load) is not taken for a rebalance.
	for deadline := time.Now().Add(20 * time.Second); i0Generation.Load() != generationBefore; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("member i0 never saw generation %d (at %d)", generationBefore, i0Generation.Load())
		}
	}
	before := assignedToI0.Load()

	stop1() // a static member closes without leaving
	_, stop2 := stoppableConsumer(t, a, "static", "seven", kgo.InstanceID("i1"), kgo.Balancers(kgo.RangeBalancer()))
	deadline := time.Now().Add(20 * time.Second)
	for {
		id, parts := memberPartitions(t, adm, "static", "i1")
		if id != oldID {
			if !slices.Equal(parts, oldParts) {
				t.Fatalf("restarted static member got %v, had %v", parts, oldParts)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("restarted static member never replaced its old member id")
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitAssigned(t, adm, "static", "seven", 7, 2)
	if after := assignedToI0.Load(); after != before {
		t.Errorf("member i0 was reassigned %d times while i1 restarted; a static rejoin must not rebalance", after-before)
	}
	// The coordinator's own count: any rebalance would have raised it
	// before the group could be Stable again.
	if g := generation(t, a, "static"); g != generationBefore {
		t.Errorf("generation went from %d to %d across a static rejoin", generationBefore, g)
	}

	stop2() // and now i1 stays away: after the 6 s session timeout it is out
	counts := waitAssigned(t, adm, "static", "seven", 7, 1)
	if counts[0] != 7 {
		t.Errorf("survivor owns %d partitions, want 7", counts[0])
	}
}
