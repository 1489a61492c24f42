package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// reloader returns a function that loads a coordinator over one
// partition log each time it is called, as each restart or failover does.
func reloader(t *testing.T, cfg Config) func() *Coordinator {
	l := openLog(t, vfs.NewMem())
	return func() *Coordinator {
		t.Helper()
		c, err := Load(context.Background(), 0, l, cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
}

// TestClassicGroupSurvivesReload (issue 29): a coordinator that loads the
// partition after another (a restart or failover) serves the classic
// groups on from their GroupMetadata records: the Stable group keeps its
// generation, leader, members, static instance and assignments, and its
// members' heartbeats succeed with no rejoin; an Empty group without
// offsets is still listed; a member whose session ends after the move is
// timed out there, and the group's Empty state survives the next move.
func TestClassicGroupSurvivesReload(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay, cfg.MinSessionTimeout = 200*time.Millisecond, time.Millisecond
	ctx := context.Background()
	load := reloader(t, cfg)
	c := load()

	// Two members, one static, in generation 1.
	static := joinRequest("g", "")
	static.InstanceID = "pod-0"
	joins := make(chan JoinResult, 2)
	for _, r := range []JoinRequest{static, joinRequest("g", "")} {
		go func() {
			res, err := c.Join(ctx, r)
			if err != nil {
				t.Error(err)
			}
			joins <- res
		}()
	}
	a, b := <-joins, <-joins
	if a.LeaderID != a.MemberID {
		a, b = b, a
	}
	assign := map[string][]byte{a.MemberID: []byte("p0"), b.MemberID: []byte("p1")}
	go c.Sync(ctx, SyncRequest{Group: "g", MemberID: b.MemberID, Generation: 1})
	if _, err := c.Sync(ctx, SyncRequest{Group: "g", MemberID: a.MemberID, Generation: 1, Assignments: assign}); err != nil {
		t.Fatal(err)
	}
	// A group that emptied, with no offsets; and one whose only member
	// stops heartbeating while its coordinator moves.
	idle, err := c.Join(ctx, joinRequest("idle", ""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx, SyncRequest{Group: "idle", MemberID: idle.MemberID, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	c.Leave("idle", []Leaver{{MemberID: idle.MemberID}})
	short := joinRequest("expiring", "")
	short.SessionTimeout = 300 * time.Millisecond
	gone, err := c.Join(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx, SyncRequest{Group: "expiring", MemberID: gone.MemberID, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	c.Close()

	c2 := load()
	d, ok, _ := c2.Describe("g")
	if !ok || d.State != "Stable" || d.Generation != 1 || d.Protocol != "range" || len(d.Members) != 2 {
		t.Fatalf("g after a reload: %+v, %v; want Stable, generation 1, range, 2 members", d, ok)
	}
	staticMember := ""
	for _, m := range a.Members {
		if m.InstanceID == static.InstanceID {
			staticMember = m.MemberID
		}
	}
	for _, m := range d.Members {
		if string(m.Assignment) != string(assign[m.MemberID]) {
			t.Errorf("member %s: assignment %q, want %q", m.MemberID, m.Assignment, assign[m.MemberID])
		}
		if want := map[bool]string{true: static.InstanceID}[m.MemberID == staticMember]; m.InstanceID != want {
			t.Errorf("member %s: instance %q, want %q", m.MemberID, m.InstanceID, want)
		}
	}
	for _, m := range []JoinResult{a, b} {
		instance := map[bool]string{true: static.InstanceID}[m.MemberID == staticMember]
		if err := c2.Heartbeat("g", m.MemberID, instance, 1); err != nil {
			t.Errorf("heartbeat of %s after the reload: %v", m.MemberID, err)
		}
	}
	if err := c2.CommitOffsets(ctx, Commit{Group: "g", MemberID: b.MemberID, Generation: 1,
		Offsets: map[TopicPartition]Offset{{"a", 0}: {Offset: 3}}}); err != nil {
		t.Errorf("commit at generation 1 after the reload: %v", err)
	}
	var listed bool
	for _, g := range c2.List() {
		if g.Group == "idle" {
			listed = g.State == "Empty"
		}
	}
	if !listed {
		t.Errorf("the Empty group without offsets is not listed after a reload: %+v", c2.List())
	}
	waitState := func(c *Coordinator, group, want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			d, _, _ := c.Describe(group)
			if d.State == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is %s, want %s", group, d.State, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitState(c2, "expiring", "Empty")
	c2.Close()
	c3 := load()
	if d, ok, _ := c3.Describe("expiring"); !ok || d.State != "Empty" || d.Generation != 2 {
		t.Errorf("expiring after a second reload: %+v, %v; want Empty at generation 2", d, ok)
	}
	if err := c3.DeleteGroup(ctx, "idle"); err != nil {
		t.Fatal(err)
	}
	c3.Close()
	if d, ok, _ := load().Describe("idle"); ok {
		t.Errorf("a deleted group is back after a reload: %+v", d)
	}
}

// TestConsumerGroupSurvivesReload (issue 29): a KIP-848 group is stored
// in Kafka's ConsumerGroup records, so a coordinator that loads the
// partition after another serves it on: the members' next heartbeats at
// their epochs succeed and keep their assignment, with the group epoch
// unchanged and no hold; a member that was revoking when the coordinator
// moved finishes there; a static member that left for now is still held;
// a member removed before the move stays removed; and the group, once
// Empty, is still listed after another reload, until it is deleted.
func TestConsumerGroupSurvivesReload(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval = time.Minute, time.Second
	cfg.Topics = fakeTopics{"a": topicA, "b": topicB}
	ctx := context.Background()
	load := reloader(t, cfg)
	c := load()
	inst := "pod-0"
	sj := joinHB("s1", "a", "b")
	sj.InstanceID = &inst
	rs := heartbeat(t, c, sj)
	s1 := &memberView{"s1", rs.MemberEpoch, rs.Assignment}
	rm := heartbeat(t, c, joinHB("m1", "a", "b"))
	m1 := &memberView{"m1", rm.MemberEpoch, rm.Assignment}
	// s1 is told to revoke half; it does not report it before the move.
	beat(t, c, s1)
	if count(s1.owned) != 4 {
		t.Fatalf("s1 keeps %v while revoking, want 4 partitions", s1.owned)
	}
	heartbeat(t, c, joinHB("gone", "a"))
	heartbeat(t, c, ConsumerHeartbeat{Group: "g", MemberID: "gone", MemberEpoch: -1})
	before, _ := c.DescribeConsumer("g")
	c.Close()

	c2 := load()
	after, err := c2.DescribeConsumer("g")
	if err != nil || after.Epoch != before.Epoch || len(after.Members) != 2 {
		t.Fatalf("after a reload: %+v, %v; want epoch %d with s1 and m1", after, err, before.Epoch)
	}
	// s1 finishes its revocation on the new coordinator, and m1 gets the
	// partitions it gave up: no member rejoins.
	for range 4 {
		beat(t, c2, s1)
		beat(t, c2, m1)
	}
	if n, m := count(s1.owned), count(m1.owned); n+m != 7 || min(n, m) != 3 {
		t.Fatalf("after reconciling on the new coordinator: s1 %v, m1 %v; want the 7 partitions split 4 and 3", s1.owned, m1.owned)
	}
	if d, _ := c2.DescribeConsumer("g"); d.Epoch != before.Epoch || d.State != "Stable" {
		t.Fatalf("group %s at epoch %d, want Stable at %d (no rejoin)", d.State, d.Epoch, before.Epoch)
	}
	// s1 leaves for now; after another move its instance is still held.
	if _, err := c2.ConsumerHeartbeat(ConsumerHeartbeat{Group: "g", MemberID: "s1", MemberEpoch: -2, InstanceID: &inst}); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	c3 := load()
	// A new process of the instance takes its assignment over, as it
	// would have on the old coordinator.
	restarted := joinHB("s2", "a", "b")
	restarted.InstanceID = &inst
	back := heartbeat(t, c3, restarted)
	if count(back.Assignment) != count(s1.owned) {
		t.Errorf("the static instance back after a reload got %v, want s1's %v", back.Assignment, s1.owned)
	}
	if d, _ := c3.DescribeConsumer("g"); d.Epoch != before.Epoch {
		t.Errorf("the static instance's return moved the group to epoch %d, want %d", d.Epoch, before.Epoch)
	}
	dup := joinHB("s3", "a", "b")
	dup.InstanceID = &inst
	if _, err := c3.ConsumerHeartbeat(dup); !errors.Is(err, ErrUnreleasedInstanceID) {
		t.Errorf("a second process with the instance id: %v, want unreleased", err)
	}
	for _, id := range []string{back.MemberID, "m1"} {
		heartbeat(t, c3, ConsumerHeartbeat{Group: "g", MemberID: id, MemberEpoch: -1})
	}
	c3.Close()
	c4 := load()
	var listed bool
	for _, g := range c4.List() {
		listed = listed || g.Group == "g" && g.Type == "consumer" && g.State == "Empty"
	}
	if !listed {
		t.Fatalf("the Empty KIP-848 group is not listed after a reload: %+v", c4.List())
	}
	if err := c4.DeleteGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	c4.Close()
	if d, err := load().DescribeConsumer("g"); err == nil {
		t.Errorf("a deleted KIP-848 group is back after a reload: %+v", d)
	}
}
