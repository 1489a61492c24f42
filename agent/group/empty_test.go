package group

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// clock is a logical time a test moves by hand; timers still run on the
// real clock, far from firing in these tests.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) set(t time.Time)         { c.ns.Store(t.UnixNano()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// TestEmptyGroupKeptUntilCleanup: as in Kafka, a group whose last member
// leaves is Empty, not Dead: listed, described and deletable. Its offsets
// are kept OffsetsRetention after it became Empty, though committed
// earlier, and the cleanup then removes it; an Empty group without offsets
// goes at the next cleanup. A group with offsets is still there, Empty,
// after a coordinator reload. KIP-848 groups are kept the same way.
func TestEmptyGroupKeptUntilCleanup(t *testing.T) {
	l := openLog(t, vfs.NewMem())
	cfg := DefaultConfig()
	cfg.InitialRebalanceDelay, cfg.OffsetsRetention = 0, time.Hour
	cfg.ConsumerHeartbeatInterval = time.Millisecond
	cfg.Topics = fakeTopics{"a": topicA}
	var clk clock
	clk.set(time.Now())
	cfg.Now = clk.now
	c, err := Load(context.Background(), 0, l, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := context.Background()
	tp := TopicPartition{"a", 0}

	// A classic member commits, and leaves two retention periods later.
	joined, err := c.Join(ctx, joinRequest("committed", ""))
	if err != nil {
		t.Fatal(err)
	}
	id := joined.MemberID
	if _, err := c.Sync(ctx, SyncRequest{Group: "committed", MemberID: id, Generation: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitOffsets(ctx, Commit{Group: "committed", MemberID: id, Generation: 1, Offsets: map[TopicPartition]Offset{tp: {Offset: 7}}}); err != nil {
		t.Fatal(err)
	}
	// Another never commits.
	idle, err := c.Join(ctx, joinRequest("idle", ""))
	if err != nil {
		t.Fatal(err)
	}
	// A KIP-848 member joins and leaves.
	res := heartbeat(t, c, ConsumerHeartbeat{Group: "kip848", MemberID: "m", RebalanceTimeout: time.Second,
		SubscribedTopics: []string{"a"}, Owned: Assignment{}, RequireClientMemberIDs: true})
	clk.advance(2 * time.Hour)
	c.Leave("committed", []Leaver{{MemberID: id}})
	c.Leave("idle", []Leaver{{MemberID: idle.MemberID}})
	heartbeat(t, c, ConsumerHeartbeat{Group: "kip848", MemberID: res.MemberID, MemberEpoch: epochLeave})

	want := []Listed{
		{Group: "committed", ProtocolType: "consumer", Type: "classic", State: "Empty"},
		{Group: "idle", ProtocolType: "consumer", Type: "classic", State: "Empty"},
		{Group: "kip848", ProtocolType: "consumer", Type: "consumer", State: "Empty"},
	}
	if got := c.List(); !equalListed(got, want) {
		t.Errorf("groups after their members left: %+v, want %+v", got, want)
	}
	if d, ok, _ := c.Describe("committed"); !ok || d.State != "Empty" {
		t.Errorf("describe: %+v, %v; want Empty", d, ok)
	}
	if err := c.DeleteGroup(ctx, "kip848"); err != nil {
		t.Errorf("delete the Empty KIP-848 group: %v", err)
	}
	if err := c.DeleteGroup(ctx, "kip848"); !errors.Is(err, ErrGroupNotFound) {
		t.Errorf("delete it again: %v, want ErrGroupNotFound", err)
	}

	// The first cleanup removes the group without offsets only: the
	// other's offsets are two hours old, but it has been Empty for less
	// than the retention.
	clk.advance(30 * time.Minute)
	if n, err := c.ExpireOffsets(ctx); n != 0 || err != nil {
		t.Fatalf("expire: %d, %v; want none", n, err)
	}
	if got := c.Groups(); len(got) != 1 || got[0] != "committed" {
		t.Errorf("groups after the first cleanup: %v, want [committed]", got)
	}

	// A reload (restart, failover) rebuilds the group, Empty, from its
	// metadata record, which keeps when it became Empty: its retention
	// still runs from then (an hour after the leave, 30 minutes ago).
	c2, err := Load(ctx, 0, l, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	if d, ok, _ := c2.Describe("committed"); !ok || d.State != "Empty" {
		t.Errorf("describe after a reload: %+v, %v; want Empty", d, ok)
	}
	if got, _ := c2.FetchOffsets("committed", nil); got[tp].Offset != 7 {
		t.Errorf("offsets after a reload: %+v", got)
	}
	for _, step := range []struct {
		after   time.Duration
		expired int
		groups  int
	}{{20 * time.Minute, 0, 1}, {20 * time.Minute, 1, 0}} {
		clk.advance(step.after)
		if n, err := c2.ExpireOffsets(ctx); n != step.expired || err != nil || len(c2.Groups()) != step.groups {
			t.Fatalf("cleanup: %d offsets expired (%v), groups %v; want %d expired, %d groups", n, err, c2.Groups(), step.expired, step.groups)
		}
	}
	if d, ok, _ := c2.Describe("committed"); ok || d.State != "Dead" {
		t.Errorf("describe after expiry: %+v, %v; want Dead", d, ok)
	}
}

func equalListed(a, b []Listed) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
