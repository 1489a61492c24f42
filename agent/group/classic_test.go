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
// syncs and leaves; the group then has nothing worth keeping and is gone
// from List, as Kafka drops a Dead group. A refused join of an unknown
// member leaves no group behind either.
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
	if l := c.List(); len(l) != 0 {
		t.Errorf("groups after the last member left without commits: %+v", l)
	}
	if _, err := c.Join(ctx, joinRequest("other", "no-such-member")); !errors.Is(err, ErrUnknownMember) {
		t.Errorf("join with an unknown member id: %v", err)
	}
	if l := c.List(); len(l) != 0 {
		t.Errorf("groups after a refused join: %+v", l)
	}
}
