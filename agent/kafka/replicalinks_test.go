package kafka

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testwait"
)

// fakeLinks is a ReplicaLinks that records FollowerLinkLost and
// FollowerLinked, and says the agents in dead seem dead.
type fakeLinks struct {
	mu           sync.Mutex
	lost, linked []int32
	dead         []int32
}

func (c *fakeLinks) FollowerLinkLost(id int32) {
	c.mu.Lock()
	c.lost = append(c.lost, id)
	c.mu.Unlock()
}

func (c *fakeLinks) FollowerLinked(id int32) {
	c.mu.Lock()
	c.linked = append(c.linked, id)
	c.mu.Unlock()
}

func (c *fakeLinks) SeemsDead(id int32) bool { return slices.Contains(c.dead, id) }

func (c *fakeLinks) heard() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int32(nil), c.lost...)
}

// TestFollowerLinkLost: ReplicaLinks hears that a follower lost its link
// when the last connection that carried its replica fetches closes, and
// not when a consumer's closes or while the follower still has another.
func TestFollowerLinkLost(t *testing.T) {
	ln := listen(t)
	cluster := &fakeLinks{}
	srv := New(DefaultConfig(), Backends{Followers: cluster}, nil, NewMetrics(prometheus.NewRegistry()))
	serve(t, srv, ln)
	// fetchAs sends one Fetch with replicaID (-1: a consumer) and reads
	// the answer, so the server has handled it before the test goes on.
	fetchAs := func(replicaID int32) net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis = 12, replicaID, 0
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(kafkawire.AppendRequest(nil, req, 1, "")); err != nil {
			t.Fatal(err)
		}
		if _, err := kafkawire.ReadFrame(c, 1<<20); err != nil {
			t.Fatal(err)
		}
		return c
	}
	consumer := fetchAs(-1)
	first, second := fetchAs(2), fetchAs(2)
	other := fetchAs(3)
	cluster.mu.Lock()
	linked := slices.Clone(cluster.linked)
	cluster.mu.Unlock()
	if !slices.Equal(linked, []int32{2, 3}) {
		t.Fatalf("heard links %v, want [2 3]: each agent's first connection only", linked)
	}

	consumer.Close()
	first.Close()
	time.Sleep(100 * time.Millisecond) // the closes are seen
	if got := cluster.heard(); len(got) != 0 {
		t.Fatalf("heard %v while agent 2 still has a connection and 3's is open", got)
	}
	second.Close()
	testwait.Until(t, 5*time.Second, func() bool { return len(cluster.heard()) == 1 }, "agent 2's last connection closed")
	other.Close()
	testwait.Until(t, 5*time.Second, func() bool { return len(cluster.heard()) == 2 }, "agent 3's connection closed")
	if got := cluster.heard(); got[0] != 2 || got[1] != 3 {
		t.Fatalf("heard %v, want [2 3]", got)
	}
}

// TestAliveLeavesOutSeemingDead: the diskless picks leave out the agents
// ReplicaLinks says seem dead, but never every agent.
func TestAliveLeavesOutSeemingDead(t *testing.T) {
	cluster := &fakeLinks{dead: []int32{2}}
	srv := New(DefaultConfig(), Backends{Followers: cluster}, nil, NewMetrics(prometheus.NewRegistry()))
	ids := func(bs []Broker) []int32 {
		var out []int32
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}
	if got := ids(srv.alive([]Broker{{ID: 0}, {ID: 1}, {ID: 2}})); !slices.Equal(got, []int32{0, 1}) {
		t.Fatalf("alive: %v, want [0 1]", got)
	}
	if got := ids(srv.alive([]Broker{{ID: 2}})); !slices.Equal(got, []int32{2}) {
		t.Fatalf("alive with 2 the only agent: %v, want [2]", got)
	}
}

// deadBackend is adminBackend with agents that seem dead.
type deadBackend struct {
	*adminBackend
	dead []int32
}

func (b *deadBackend) FollowerLinkLost(int32)  {}
func (b *deadBackend) FollowerLinked(int32)    {}
func (b *deadBackend) SeemsDead(id int32) bool { return slices.Contains(b.dead, id) }

// TestMetadataPicksNoSeemingDeadAgent: Metadata names no agent that seems
// dead as a diskless partition's leader, though gossip (Brokers) still
// lists it, and names it again once it no longer seems dead.
func TestMetadataPicksNoSeemingDeadAgent(t *testing.T) {
	b := &deadBackend{adminBackend: newAdminBackend()}
	b.brokers = append(b.brokers, Broker{ID: 3, Host: "127.0.0.1", Port: 9094})
	var parts []*adminPartition
	for i := range int32(24) {
		parts = append(parts, &adminPartition{index: i, leader: 1})
	}
	b.addTopic("dl", map[string]string{metadata.DisklessEnable: "true"}, parts...).Resolved.Diskless = true
	s := New(DefaultConfig(), Backends{Cluster: b, Topics: b, Followers: b}, nil, nil)
	leaders := func() map[int32]int {
		resp, err := handleMetadata(context.Background(), s, &request{key: 3, version: 12}, kmsg.NewPtrMetadataRequest())
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int{}
		for _, mt := range resp.Topics {
			for _, mp := range mt.Partitions {
				out[mp.Leader]++
			}
		}
		return out
	}
	if got := leaders(); got[3] == 0 {
		t.Fatalf("leaders %v: agent 3 leads nothing while alive (the test needs it to)", got)
	}
	b.dead = []int32{3}
	if got := leaders(); got[3] != 0 || got[1]+got[2] != 24 {
		t.Fatalf("leaders %v while agent 3 seems dead, want agents 1 and 2 only", got)
	}
	b.dead = nil
	if got := leaders(); got[3] == 0 {
		t.Fatalf("leaders %v: agent 3 no longer seems dead and leads nothing", got)
	}
}
