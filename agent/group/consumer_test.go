package group

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// fakeTopics is a fixed set of topics.
type fakeTopics map[string]TopicInfo

func (f fakeTopics) Topic(name string) (TopicInfo, bool) { t, ok := f[name]; return t, ok }
func (f fakeTopics) TopicByID(id [16]byte) (TopicInfo, bool) {
	for _, t := range f {
		if t.ID == id {
			return t, true
		}
	}
	return TopicInfo{}, false
}
func (f fakeTopics) AllTopics() []TopicInfo {
	var out []TopicInfo
	for _, t := range f {
		out = append(out, t)
	}
	return out
}

var (
	topicA = TopicInfo{Name: "a", ID: [16]byte{1}, Partitions: 4}
	topicB = TopicInfo{Name: "b", ID: [16]byte{2}, Partitions: 3}
)

func consumerCoordinator(t *testing.T, session time.Duration) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ConsumerSessionTimeout, cfg.ConsumerHeartbeatInterval = session, 10*time.Millisecond
	cfg.Topics = fakeTopics{"a": topicA, "b": topicB}
	c, err := Load(context.Background(), 0, openLog(t, vfs.NewMem()), cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func joinHB(member string, topics ...string) ConsumerHeartbeat {
	return ConsumerHeartbeat{Group: "g", MemberID: member, MemberEpoch: 0, RebalanceTimeout: 5 * time.Second,
		SubscribedTopics: topics, Owned: Assignment{}, RequireClientMemberIDs: true}
}

// fullHB is a heartbeat that reports what the member owns.
func fullHB(member string, epoch int32, owned Assignment) ConsumerHeartbeat {
	return ConsumerHeartbeat{Group: "g", MemberID: member, MemberEpoch: epoch, RebalanceTimeout: -1, Owned: owned}
}

// beat sends a full heartbeat as a client would: it reports what it owns
// and adopts the epoch and any assignment of the answer.
func beat(t *testing.T, c *Coordinator, m *memberView) {
	t.Helper()
	res := heartbeat(t, c, fullHB(m.id, m.epoch, m.owned))
	m.epoch = res.MemberEpoch
	if res.Assignment != nil {
		m.owned = res.Assignment
	}
}

type memberView struct {
	id    string
	epoch int32
	owned Assignment
}

func heartbeat(t *testing.T, c *Coordinator, r ConsumerHeartbeat) ConsumerHeartbeatResult {
	t.Helper()
	res, err := c.ConsumerHeartbeat(r)
	if err != nil {
		t.Fatalf("heartbeat %s epoch %d: %v", r.MemberID, r.MemberEpoch, err)
	}
	return res
}

func count(a Assignment) int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// TestConsumerReconciliation: a second member joins; the first is told to
// give up half its partitions at its old epoch, and only once it reports
// that it did does the second member get them. A partition is never held
// by two members.
func TestConsumerReconciliation(t *testing.T) {
	c := consumerCoordinator(t, time.Minute)
	r1 := heartbeat(t, c, joinHB("m1", "a"))
	if r1.MemberEpoch != 1 || count(r1.Assignment) != 4 {
		t.Fatalf("first member: epoch %d, assignment %v; want epoch 1 with all 4 partitions", r1.MemberEpoch, r1.Assignment)
	}
	r2 := heartbeat(t, c, joinHB("m2", "a"))
	if r2.MemberEpoch != 2 || count(r2.Assignment) != 0 {
		t.Fatalf("second member: epoch %d, assignment %v; want epoch 2 and nothing yet (m1 holds all)", r2.MemberEpoch, r2.Assignment)
	}
	m1 := &memberView{"m1", 1, r1.Assignment}
	m2 := &memberView{"m2", 2, Assignment{}}
	// m1 still owns everything: it is asked to revoke and keeps epoch 1.
	beat(t, c, m1)
	if m1.epoch != 1 || count(m1.owned) != 2 {
		t.Fatalf("m1 before revoking: epoch %d, assignment %v; want epoch 1 keeping 2", m1.epoch, m1.owned)
	}
	if d, _ := c.DescribeConsumer("g"); d.State != "Reconciling" {
		t.Errorf("state while revoking: %s, want Reconciling", d.State)
	}
	// m2 cannot have the partitions yet.
	if beat(t, c, m2); count(m2.owned) != 0 {
		t.Fatalf("m2 got %v while m1 still holds them", m2.owned)
	}
	// m1 reports it revoked: it moves to epoch 2.
	if beat(t, c, m1); m1.epoch != 2 || count(m1.owned) != 2 {
		t.Fatalf("m1 after revoking: epoch %d, assignment %v; want epoch 2 with 2", m1.epoch, m1.owned)
	}
	if beat(t, c, m2); count(m2.owned) != 2 {
		t.Fatalf("m2 after m1 revoked: %v, want 2 partitions", m2.owned)
	}
	for _, p := range m2.owned[topicA.ID] {
		for _, q := range m1.owned[topicA.ID] {
			if p == q {
				t.Fatalf("partition %d assigned to both members", p)
			}
		}
	}
	beat(t, c, m2)
	if d, _ := c.DescribeConsumer("g"); d.State != "Stable" || d.Epoch != 2 {
		t.Errorf("after reconciliation: %s at epoch %d, want Stable at 2", d.State, d.Epoch)
	}
	// A keepalive (nothing changed) carries no assignment.
	if k := heartbeat(t, c, ConsumerHeartbeat{Group: "g", MemberID: "m2", MemberEpoch: 2, RebalanceTimeout: -1}); k.Assignment != nil {
		t.Errorf("keepalive answered with assignment %v", k.Assignment)
	}
	// m2 leaves: m1 gets everything at epoch 3.
	if l := heartbeat(t, c, ConsumerHeartbeat{Group: "g", MemberID: "m2", MemberEpoch: -1}); l.MemberEpoch != -1 {
		t.Errorf("leave answered epoch %d, want -1", l.MemberEpoch)
	}
	if beat(t, c, m1); m1.epoch != 3 || count(m1.owned) != 4 {
		t.Fatalf("m1 alone again: epoch %d, assignment %v", m1.epoch, m1.owned)
	}
}

// TestConsumerHeartbeatErrors: the Kafka errors clients act on.
func TestConsumerHeartbeatErrors(t *testing.T) {
	c := consumerCoordinator(t, time.Minute)
	heartbeat(t, c, joinHB("m1", "a"))
	bad := "x"
	cases := []struct {
		name string
		r    ConsumerHeartbeat
		want error
	}{
		{"unknown member", fullHB("nobody", 1, Assignment{}), ErrUnknownMember},
		{"epoch ahead", fullHB("m1", 5, Assignment{}), ErrFencedMemberEpoch},
		{"join without rebalance timeout", ConsumerHeartbeat{Group: "g", MemberID: "m9", SubscribedTopics: []string{"a"}, Owned: Assignment{}, RebalanceTimeout: -1}, ErrInvalidRequest},
		{"join owning partitions", ConsumerHeartbeat{Group: "g", MemberID: "m9", SubscribedTopics: []string{"a"}, Owned: Assignment{topicA.ID: {0}}}, ErrInvalidRequest},
		{"join without subscription", ConsumerHeartbeat{Group: "g", MemberID: "m9", Owned: Assignment{}}, ErrInvalidRequest},
		{"v1 without member id", ConsumerHeartbeat{Group: "g", SubscribedTopics: []string{"a"}, Owned: Assignment{}, RequireClientMemberIDs: true}, ErrInvalidRequest},
		{"unknown assignor", ConsumerHeartbeat{Group: "g", MemberID: "m9", SubscribedTopics: []string{"a"}, Owned: Assignment{}, ServerAssignor: &bad}, ErrUnsupportedAssignor},
		{"bad regex", ConsumerHeartbeat{Group: "g", MemberID: "m9", SubscribedRegex: strp("a("), Owned: Assignment{}}, ErrInvalidRegex},
		{"epoch below -2", ConsumerHeartbeat{Group: "g", MemberID: "m1", MemberEpoch: -3}, ErrInvalidRequest},
		{"empty group id", ConsumerHeartbeat{MemberID: "m1", MemberEpoch: 1}, ErrInvalidGroupID},
	}
	for _, tc := range cases {
		if _, err := c.ConsumerHeartbeat(tc.r); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// A classic JoinGroup to this group is refused, and a KIP-848
	// heartbeat to a classic group with members.
	if _, err := c.Join(context.Background(), joinRequest("g", "")); !errors.Is(err, ErrInconsistentProtocol) {
		t.Errorf("classic join to a consumer group: %v, want ErrInconsistentProtocol", err)
	}
}

func strp(s string) *string { return &s }

// TestConsumerEpochFencing: after two epoch bumps a member's old epoch is
// fenced; the previous epoch is accepted only with a subset of what it is
// assigned (a lost response).
func TestConsumerEpochFencing(t *testing.T) {
	c := consumerCoordinator(t, time.Minute)
	r1 := heartbeat(t, c, joinHB("m1", "a"))
	heartbeat(t, c, joinHB("m2", "b")) // bumps to 2; m1 keeps all of a
	h := heartbeat(t, c, fullHB("m1", 1, r1.Assignment))
	if h.MemberEpoch != 2 {
		t.Fatalf("m1 epoch %d, want 2", h.MemberEpoch)
	}
	// The response with epoch 2 was "lost": epoch 1 with a subset passes.
	if _, err := c.ConsumerHeartbeat(fullHB("m1", 1, r1.Assignment)); err != nil {
		t.Errorf("previous epoch with owned ⊆ assigned: %v", err)
	}
	if _, err := c.ConsumerHeartbeat(fullHB("m1", 1, Assignment{topicB.ID: {0}})); !errors.Is(err, ErrFencedMemberEpoch) {
		t.Errorf("previous epoch owning more than assigned: %v, want fenced", err)
	}
	// Commits: current epoch passes; the previous one only for partitions
	// still held; another member's partitions are stale.
	commit := func(epoch int32, topic string) error {
		return c.CommitOffsets(context.Background(), Commit{Group: "g", MemberID: "m1", Generation: epoch,
			Offsets: map[TopicPartition]Offset{{Topic: topic, Partition: 0}: {Offset: 1}}})
	}
	if err := commit(2, "a"); err != nil {
		t.Errorf("commit at current epoch: %v", err)
	}
	if err := commit(1, "a"); err != nil {
		t.Errorf("commit at previous epoch of a held partition: %v", err)
	}
	if err := commit(1, "b"); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Errorf("commit at previous epoch of another member's partition: %v, want stale", err)
	}
	if err := commit(3, "a"); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Errorf("commit ahead of the member: %v, want stale", err)
	}
	if err := c.CheckOffsetFetch("g", "m1", 1); !errors.Is(err, ErrStaleMemberEpoch) {
		t.Errorf("offset fetch at an old epoch: %v, want stale", err)
	}
	if err := c.CheckOffsetFetch("g", "", -1); err != nil {
		t.Errorf("offset fetch by an admin: %v", err)
	}
	if err := c.DeleteGroup(context.Background(), "g"); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("delete a group with members: %v, want not empty", err)
	}
}

// TestConsumerSessionTimeoutAndStaticMember: a member that stops
// heartbeating is removed and its partitions go to the others; a static
// member that leaves with epoch -2 and returns under a new member id within
// its session gets its partitions back without an epoch bump.
func TestConsumerSessionTimeoutAndStaticMember(t *testing.T) {
	c := consumerCoordinator(t, 300*time.Millisecond)
	inst := "i1"
	j := joinHB("s1", "a")
	j.InstanceID = &inst
	rs := heartbeat(t, c, j)
	heartbeat(t, c, joinHB("m2", "a"))
	// s1 revokes to its share; m2 takes the rest; both stable at 2.
	s1 := &memberView{"s1", rs.MemberEpoch, rs.Assignment}
	m2 := &memberView{"m2", 2, Assignment{}}
	beat(t, c, s1)
	beat(t, c, s1)
	beat(t, c, m2)
	if count(s1.owned) != 2 || count(m2.owned) != 2 || s1.epoch != 2 {
		t.Fatalf("shares: s1 %v at %d, m2 %v", s1.owned, s1.epoch, m2.owned)
	}
	// Static leave, then rejoin as a new member id: same partitions, same
	// group epoch.
	if _, err := c.ConsumerHeartbeat(ConsumerHeartbeat{Group: "g", MemberID: "s1", MemberEpoch: -2, InstanceID: &inst}); err != nil {
		t.Fatal(err)
	}
	other := joinHB("s1-new", "a")
	other.InstanceID = strp("i1")
	back := heartbeat(t, c, other)
	if back.MemberEpoch != 2 || !back.Assignment.set().equal(s1.owned.set()) {
		t.Fatalf("static rejoin: epoch %d, %v; want epoch 2 and %v", back.MemberEpoch, back.Assignment, s1.owned)
	}
	if d, _ := c.DescribeConsumer("g"); d.Epoch != 2 {
		t.Errorf("static rejoin bumped the group epoch to %d", d.Epoch)
	}
	s1 = &memberView{"s1-new", back.MemberEpoch, back.Assignment}
	// A second member with the same instance id while it is held.
	dup := joinHB("dup", "a")
	dup.InstanceID = strp("i1")
	if _, err := c.ConsumerHeartbeat(dup); !errors.Is(err, ErrUnreleasedInstanceID) {
		t.Errorf("duplicate instance id: %v, want unreleased", err)
	}
	// m2 stops heartbeating; keep the static member alive until m2 expires.
	deadline := time.Now().Add(5 * time.Second)
	for count(s1.owned) != 4 {
		if time.Now().After(deadline) {
			d, _ := c.DescribeConsumer("g")
			t.Fatalf("m2 never expired: %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
		beat(t, c, s1)
	}
}

// TestAssignorsBalance: uniform keeps members within one partition of
// each other and moves few partitions as members come and go; range gives
// co-partitioned topics the same partition numbers.
func TestAssignorsBalance(t *testing.T) {
	topics := []TopicInfo{{Name: "t", ID: [16]byte{9}, Partitions: 7}}
	var prev map[string]partSet
	var members []assignMember
	for n := 1; n <= 8; n++ {
		members = append(members, assignMember{id: string(rune('a' + n - 1)), topics: map[[16]byte]bool{{9}: true}})
		for i := range members {
			members[i].current = prev[members[i].id]
		}
		got := assignUniform(members, topics)
		lo, hi, total := 100, 0, 0
		for _, m := range members {
			lo, hi, total = min(lo, len(got[m.id])), max(hi, len(got[m.id])), total+len(got[m.id])
		}
		if total != 7 || hi-lo > 1 {
			t.Fatalf("%d members: total %d, counts in [%d, %d]", n, total, lo, hi)
		}
		moved := 0
		for id, ps := range prev {
			for tp := range ps {
				if !got[id].has(tp) {
					moved++
				}
			}
		}
		if n > 1 && moved > 7/(n-1)+1 {
			t.Errorf("%d members: %d partitions moved, more than a fair share", n, moved)
		}
		prev = got
	}
	co := []TopicInfo{{Name: "x", ID: [16]byte{1}, Partitions: 5}, {Name: "y", ID: [16]byte{2}, Partitions: 5}}
	both := map[[16]byte]bool{{1}: true, {2}: true}
	r := assignRange([]assignMember{{id: "m1", topics: both}, {id: "m2", topics: both}}, co)
	for _, id := range []string{"m1", "m2"} {
		a := r[id].assignment()
		if len(a[[16]byte{1}]) == 0 || !slices.Equal(a[[16]byte{1}], a[[16]byte{2}]) {
			t.Errorf("range: member %s has x %v and y %v, want the same partitions", id, a[[16]byte{1}], a[[16]byte{2}])
		}
	}
}

// TestConsumerRestartHold: after a coordinator restart, a group that
// existed gets no partitions until its old members had time to learn of
// the restart (two heartbeat intervals); a new group is not held.
func TestConsumerRestartHold(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, vfs.NewMem())
	cfg := DefaultConfig()
	cfg.ConsumerHeartbeatInterval = 200 * time.Millisecond
	cfg.Topics = fakeTopics{"a": topicA}
	c, err := Load(ctx, 0, l, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, c, "g", map[TopicPartition]int64{{"a", 0}: 5})
	c.Close()
	c, err = Load(ctx, 0, l, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := heartbeat(t, c, joinHB("m1", "a"))
	if count(r.Assignment) != 0 {
		t.Fatalf("right after the restart the old group got %v", r.Assignment)
	}
	if fresh := heartbeat(t, c, ConsumerHeartbeat{Group: "new", MemberID: "n1", RebalanceTimeout: time.Second,
		SubscribedTopics: []string{"a"}, Owned: Assignment{}}); count(fresh.Assignment) != 4 {
		t.Errorf("a new group was held: %v", fresh.Assignment)
	}
	m1 := &memberView{"m1", r.MemberEpoch, Assignment{}}
	deadline := time.Now().Add(5 * time.Second)
	for count(m1.owned) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the hold never ended: %v", m1.owned)
		}
		time.Sleep(20 * time.Millisecond)
		beat(t, c, m1)
	}
}

// TestConsumerStaticRejoinWithOwnID: a static member that left with epoch
// -2 and comes back with its own member id holds its instance id again, so
// a second process with that instance id is refused.
func TestConsumerStaticRejoinWithOwnID(t *testing.T) {
	c := consumerCoordinator(t, time.Minute)
	inst := "i1"
	j := joinHB("s1", "a")
	j.InstanceID = &inst
	heartbeat(t, c, j)
	if _, err := c.ConsumerHeartbeat(ConsumerHeartbeat{Group: "g", MemberID: "s1", MemberEpoch: -2, InstanceID: &inst}); err != nil {
		t.Fatal(err)
	}
	if back := heartbeat(t, c, j); back.MemberEpoch < 1 || count(back.Assignment) != 4 {
		t.Fatalf("rejoin with the same id: epoch %d, %v", back.MemberEpoch, back.Assignment)
	}
	dup := joinHB("s2", "a")
	dup.InstanceID = &inst
	if _, err := c.ConsumerHeartbeat(dup); !errors.Is(err, ErrUnreleasedInstanceID) {
		t.Errorf("second process with the instance id: %v, want unreleased", err)
	}
}
