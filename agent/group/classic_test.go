package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

func classicCoordinator(t *testing.T) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay = 0
	c, err := Load(context.Background(), 0, openLog(t, vfs.NewMem()), cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func joinRequest(group, member string) JoinRequest {
	return JoinRequest{Group: group, MemberID: member, ClientID: "c", ProtocolType: "consumer",
		Protocols:      []Protocol{{Name: "range", Metadata: []byte{1}}},
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 10 * time.Second}
}

// TestGroupLifeCycle: one member joins (first with MEMBER_ID_REQUIRED),
// syncs and leaves; the group then stays, Empty, as Kafka keeps it, until
// the offsets cleanup removes it (no offsets: at its next run). A refused
// join of an unknown member leaves no group behind.
func TestGroupLifeCycle(t *testing.T) {
	c := classicCoordinator(t)
	ctx := context.Background()
	r := joinRequest("g", "")
	r.RequireKnownMemberID = true
	res, err := c.Join(ctx, r)
	if !errors.Is(err, ErrMemberIDRequired) || res.MemberID == "" {
		t.Fatalf("first join: %+v, %v; want ErrMemberIDRequired with an id", res, err)
	}
	res, err = c.Join(ctx, joinRequest("g", res.MemberID))
	if err != nil || res.Generation != 1 || res.LeaderID != res.MemberID || len(res.Members) != 1 {
		t.Fatalf("second join: %+v, %v; want generation 1 with this member leading", res, err)
	}
	id := res.MemberID
	sync, err := c.Sync(ctx, SyncRequest{Group: "g", MemberID: id, Generation: 1, Assignments: map[string][]byte{id: []byte("all")}})
	if err != nil || string(sync.Assignment) != "all" {
		t.Fatalf("sync: %+v, %v", sync, err)
	}
	if d, _, _ := c.Describe("g"); d.State != "Stable" || d.Generation != 1 {
		t.Fatalf("after sync: %s at generation %d, want Stable at 1", d.State, d.Generation)
	}
	if err := c.Heartbeat("g", id, "", 0); !errors.Is(err, ErrIllegalGeneration) {
		t.Errorf("heartbeat with an old generation: %v", err)
	}
	errs, err := c.Leave("g", []Leaver{{MemberID: id}})
	if err != nil || errs[0] != nil {
		t.Fatalf("leave: %v %v", err, errs)
	}
	if l := c.List(); len(l) != 1 || l[0] != (Listed{Group: "g", ProtocolType: "consumer", Type: "classic", State: "Empty"}) {
		t.Errorf("groups after the last member left without commits: %+v, want g Empty", l)
	}
	if d, ok, _ := c.Describe("g"); !ok || d.State != "Empty" || d.Generation != 2 || d.ProtocolType != "consumer" {
		t.Errorf("after the last member left: %+v (ok %v), want Empty at generation 2", d, ok)
	}
	if n, err := c.ExpireOffsets(ctx); n != 0 || err != nil {
		t.Fatalf("expire: %d, %v", n, err)
	}
	if l := c.List(); len(l) != 0 {
		t.Errorf("groups after the cleanup: %+v, want none", l)
	}
	if _, err := c.Join(ctx, joinRequest("other", "no-such-member")); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("join with an unknown member id: %v", err)
	}
	if l := c.List(); len(l) != 0 {
		t.Errorf("groups after a refused join: %+v", l)
	}
}

// TestCommitDuringRebalance pins Kafka's OffsetCommit rules for a classic
// group through one rebalance: members commit in Stable and in
// PreparingRebalance (clients commit in their revoke callbacks then), get
// REBALANCE_IN_PROGRESS only in CompletingRebalance, and are refused with
// an unknown id, a stale generation or a fenced instance id.
func TestCommitDuringRebalance(t *testing.T) {
	c := classicCoordinator(t)
	ctx := context.Background()
	tp := TopicPartition{"t", 0}
	commitAs := func(member, instance string, generation int32) error {
		return c.CommitOffsets(ctx, Commit{Group: "g", MemberID: member, InstanceID: instance, Generation: generation,
			Offsets: map[TopicPartition]Offset{tp: {Offset: int64(generation)}}})
	}
	ra := joinRequest("g", "")
	ra.InstanceID = "a"
	a, err := c.Join(ctx, ra)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sync(ctx, SyncRequest{Group: "g", MemberID: a.MemberID, InstanceID: "a", Generation: 1}); err != nil {
		t.Fatal(err)
	}
	if err := commitAs(a.MemberID, "a", 1); err != nil {
		t.Errorf("commit in Stable: %v", err)
	}
	// A second member joins: the group prepares a rebalance and waits for a.
	joinedB := make(chan JoinResult, 1)
	go func() {
		res, err := c.Join(ctx, joinRequest("g", ""))
		if err != nil {
			t.Errorf("join b: %v", err)
		}
		joinedB <- res
	}()
	waitFor(t, func() bool { d, _, _ := c.Describe("g"); return d.State == "PreparingRebalance" })
	if err := commitAs(a.MemberID, "a", 1); err != nil {
		t.Errorf("commit in PreparingRebalance by a member of the current generation: %v, want accepted", err)
	}
	for _, tc := range []struct {
		name, member, instance string
		generation             int32
		want                   error
	}{
		{"unknown member", "nobody", "", 1, ErrUnknownMember},
		{"old generation", a.MemberID, "a", 0, ErrIllegalGeneration},
		{"fenced instance", "nobody", "a", 1, ErrFencedInstanceID},
		{"generation -1 without a member", "", "", -1, ErrUnknownMember},
	} {
		if err := commitAs(tc.member, tc.instance, tc.generation); !errors.Is(err, tc.want) {
			t.Errorf("%s in PreparingRebalance: %v, want %v", tc.name, err, tc.want)
		}
	}
	// a rejoins: generation 2, CompletingRebalance until the leader syncs.
	ra.MemberID = a.MemberID
	if a, err = c.Join(ctx, ra); err != nil || a.Generation != 2 {
		t.Fatalf("rejoin a: %+v, %v", a, err)
	}
	b := <-joinedB
	if err := commitAs(a.MemberID, "a", 2); !errors.Is(err, ErrRebalanceInProgress) {
		t.Errorf("commit in CompletingRebalance: %v, want ErrRebalanceInProgress", err)
	}
	if err := commitAs(b.MemberID, "", 1); !errors.Is(err, ErrIllegalGeneration) {
		t.Errorf("commit with the previous generation in CompletingRebalance: %v, want ErrIllegalGeneration", err)
	}
	for _, m := range []struct{ id, instance string }{{a.MemberID, "a"}, {b.MemberID, ""}} {
		go c.Sync(ctx, SyncRequest{Group: "g", MemberID: m.id, InstanceID: m.instance, Generation: 2})
	}
	waitFor(t, func() bool { d, _, _ := c.Describe("g"); return d.State == "Stable" })
	if err := commitAs(b.MemberID, "", 2); err != nil {
		t.Errorf("commit in Stable at generation 2: %v", err)
	}
	// Both leave: the group is Empty and takes simple commits again; a
	// commit naming a generation is from no member of it.
	c.Leave("g", []Leaver{{MemberID: a.MemberID, InstanceID: "a"}, {MemberID: b.MemberID}})
	if err := commitAs("", "", -1); err != nil {
		t.Errorf("commit with generation -1 to the Empty group: %v", err)
	}
	if err := commitAs(b.MemberID, "", 3); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("commit with a generation to the Empty group: %v, want ErrUnknownMember", err)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
