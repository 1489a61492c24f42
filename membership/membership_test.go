package membership

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threeMembers starts agents 0, 1 and 2, the last two joining through 0,
// and waits until each sees all three.
func threeMembers(t *testing.T, c *cluster) []*member {
	t.Helper()
	a := c.start(0)
	seed := a.Self().GossipAddr
	ms := []*member{a, c.start(1, seed), c.start(2, seed)}
	for _, m := range ms {
		waitFor(t, fmt.Sprintf("agent %d to see 3 members", m.Self().ID), func() bool { return len(m.Members()) == 3 })
	}
	return ms
}

func TestThreeMembersSeeEachOther(t *testing.T) {
	c := newCluster(t)
	ms := threeMembers(t, c)
	var selves []Member
	for _, m := range ms {
		s := m.Self()
		if !strings.HasPrefix(s.Name, fmt.Sprintf("agent-%d-", s.ID)) || len(s.Name) != len("agent-0-")+8 {
			t.Errorf("node name %q: want agent-<id>-<8 hex digits>", s.Name)
		}
		if host, port, err := net.SplitHostPort(s.GossipAddr); err != nil || host != "127.0.0.1" || port == "0" {
			t.Errorf("gossip address %q: want 127.0.0.1 and the port the kernel chose", s.GossipAddr)
		}
		selves = append(selves, s)
	}
	for _, m := range ms {
		got := m.Members()
		if !slices.Equal(got, selves) {
			t.Errorf("agent %d sees\n%+v\nwant\n%+v", m.Self().ID, got, selves)
		}
	}
	// The seed got a join event for each of the others and none for itself.
	for _, other := range ms[1:] {
		e := ms[0].waitEvent(t, "join of "+other.Self().Name, isEvent(EventJoin, other.Self().Name))
		if e.Member != other.Self() {
			t.Errorf("join event member %+v, want %+v", e.Member, other.Self())
		}
	}
	if _, ok := ms[0].findEvent(func(e Event) bool { return e.Member.Name == ms[0].Self().Name }); ok {
		t.Error("an agent got an event about itself")
	}
}

func TestGracefulLeave(t *testing.T) {
	c := newCluster(t)
	ms := threeMembers(t, c)
	gone := ms[2].Self().Name
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := ms[2].Leave(ctx); err != nil {
		t.Fatalf("leave: %v", err)
	}
	for _, m := range ms[:2] {
		m.waitEvent(t, "leave of "+gone, isEvent(EventLeave, gone))
		if slices.Contains(memberNames(m), gone) {
			t.Errorf("agent %d still lists %s after its leave event", m.Self().ID, gone)
		}
		if _, failed := m.findEvent(isEvent(EventFail, gone)); failed {
			t.Errorf("agent %d saw a graceful leave as a failure", m.Self().ID)
		}
	}
	t.Logf("leave seen by both others after %v", time.Since(start))
	// Leave is idempotent; after it the agent may only close.
	if err := ms[2].Leave(ctx); err != nil {
		t.Errorf("second leave: %v", err)
	}
	if err := ms[2].SetState(ctx, StateDraining); !errors.Is(err, ErrLeft) {
		t.Errorf("SetState after Leave = %v, want ErrLeft", err)
	}
	if err := ms[2].Broadcast("k", nil); !errors.Is(err, ErrLeft) {
		t.Errorf("Broadcast after Leave = %v, want ErrLeft", err)
	}
}

func TestFailureDetected(t *testing.T) {
	c := newCluster(t)
	ms := threeMembers(t, c)
	gone := ms[2].Self().Name
	start := time.Now()
	ms[2].stop() // no leave: as if the process were killed
	for _, m := range ms[:2] {
		e := m.waitEvent(t, "failure of "+gone, isEvent(EventFail, gone))
		if e.Member.ID != 2 {
			t.Errorf("fail event for agent %d, want 2", e.Member.ID)
		}
		if slices.Contains(memberNames(m), gone) {
			t.Errorf("agent %d still lists %s after its fail event", m.Self().ID, gone)
		}
	}
	t.Logf("failure seen by both others after %v", time.Since(start))
}

func TestSetStatePropagates(t *testing.T) {
	c := newCluster(t)
	ms := threeMembers(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	changed := ms[1]
	name := changed.Self().Name
	for _, s := range []State{StateActive, StateDraining} {
		if err := changed.SetState(ctx, s); err != nil {
			t.Fatalf("SetState(%v): %v", s, err)
		}
		if got := changed.Self().State; got != s {
			t.Fatalf("Self().State = %v after SetState(%v)", got, s)
		}
		for _, m := range ms {
			waitFor(t, fmt.Sprintf("agent %d to see agent 1 %v", m.Self().ID, s), func() bool {
				i := slices.IndexFunc(m.Members(), func(x Member) bool { return x.Name == name })
				return i >= 0 && m.Members()[i].State == s
			})
		}
		for _, m := range []*member{ms[0], ms[2]} {
			e := m.waitEvent(t, fmt.Sprintf("update of agent 1 to %v", s), func(e Event) bool {
				return e.Type == EventUpdate && e.Member.Name == name && e.Member.State == s
			})
			if e.Member.KafkaAddr != changed.Self().KafkaAddr || e.Member.Started != changed.Self().Started {
				t.Errorf("update event lost the other fields: %+v", e.Member)
			}
		}
	}
	// Setting the state it already has gossips nothing and succeeds.
	if err := changed.SetState(ctx, StateDraining); err != nil {
		t.Fatal(err)
	}
	if err := changed.SetState(ctx, State(0)); err == nil {
		t.Error("SetState(0) succeeded")
	}
}

func TestBroadcastReachesOthers(t *testing.T) {
	c := newCluster(t)
	ms := threeMembers(t, c)
	sender := ms[0]
	const key = "topics/0123456789abcdef0123456789abcdef/0/state.json"
	if err := sender.Broadcast(key, []byte("version=7")); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[1:] {
		e := m.waitEvent(t, "broadcast", func(e Event) bool { return e.Type == EventBroadcast && e.Key == key })
		if string(e.Payload) != "version=7" || e.Member != sender.Self() {
			t.Errorf("agent %d got %+v, want version=7 from %+v", m.Self().ID, e, sender.Self())
		}
	}

	// Many broadcasts: each arrives once (copies from retransmissions are
	// dropped), and the sender never hears its own.
	const n = 30
	for i := range n {
		if err := sender.Broadcast(fmt.Sprintf("objects/%d", i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	isMany := func(e Event) bool { return e.Type == EventBroadcast && strings.HasPrefix(e.Key, "objects/") }
	for _, m := range ms[1:] {
		waitFor(t, fmt.Sprintf("agent %d to get %d broadcasts", m.Self().ID, n), func() bool {
			return m.countEvents(isMany) >= n
		})
		if got := m.countEvents(isMany); got != n {
			t.Errorf("agent %d got %d broadcasts, want %d: copies were not dropped", m.Self().ID, got, n)
		}
	}
	if got := sender.countEvents(func(e Event) bool { return e.Type == EventBroadcast }); got != 0 {
		t.Errorf("the sender got %d of its own broadcasts", got)
	}
}

func TestBroadcastLimits(t *testing.T) {
	c := newCluster(t)
	m := c.start(0)
	max := LoopbackConfig().BroadcastMaxBytes
	if err := m.Broadcast("k", make([]byte, max-1)); err != nil {
		t.Errorf("broadcast of exactly the limit: %v", err)
	}
	if err := m.Broadcast("k", make([]byte, max)); !errors.Is(err, ErrBroadcastTooLarge) {
		t.Errorf("broadcast over the limit: %v, want ErrBroadcastTooLarge", err)
	}
	if err := m.Broadcast(strings.Repeat("k", 256), nil); !errors.Is(err, ErrBroadcastTooLarge) {
		t.Errorf("256-byte key: %v, want ErrBroadcastTooLarge", err)
	}
	if err := m.Broadcast("", []byte("x")); err == nil {
		t.Error("empty key accepted")
	}
	// A queue with nobody to gossip to stays within its limit.
	for i := range LoopbackConfig().BroadcastQueueLimit + 100 {
		if err := m.Broadcast(strconv.Itoa(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if q := m.bq.NumQueued(); q > LoopbackConfig().BroadcastQueueLimit {
		t.Errorf("%d broadcasts queued, over the limit %d", q, LoopbackConfig().BroadcastQueueLimit)
	}
}

func TestJoinSeedThatStartsLater(t *testing.T) {
	c := newCluster(t)
	port := freePort(t)
	seed := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	early := c.start(1, seed) // the seed is down: Start still succeeds
	if got := len(early.Members()); got != 1 {
		t.Fatalf("alone agent sees %d members", got)
	}
	// Let the joiner fail a few times, so the seed is found by a retry.
	waitFor(t, "three failed join attempts", func() bool { return early.joinFailures.Load() >= 3 })
	cfg := c.config()
	cfg.GossipAddr = seed
	late := c.startWith(cfg, 0)
	start := time.Now()
	for _, m := range []*member{early, late} {
		waitFor(t, fmt.Sprintf("agent %d to see 2 members", m.Self().ID), func() bool { return len(m.Members()) == 2 })
	}
	t.Logf("joined %v after the seed started", time.Since(start))
}

func TestRejoinWhenAlone(t *testing.T) {
	c := newCluster(t)
	port := freePort(t)
	seed := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cfg := c.config()
	cfg.GossipAddr = seed
	first := c.startWith(cfg, 0)
	b := c.start(1, seed)
	waitFor(t, "agent 1 to join", func() bool { return len(b.Members()) == 2 })
	// The seed dies; b is alone; a new seed process comes up on the same
	// address without seeds of its own. b must find it by itself.
	first.stop()
	b.waitEvent(t, "failure of the seed", isEvent(EventFail, first.Self().Name))
	second := c.startWith(cfg, 0)
	waitFor(t, "agent 1 to rejoin the restarted seed", func() bool {
		return slices.Contains(memberNames(b), second.Self().Name)
	})
	if second.Self().Name == first.Self().Name {
		t.Fatal("a restarted agent got its old node name")
	}
}

func TestDuplicateAgentIDReported(t *testing.T) {
	c := newCluster(t)
	a := c.start(0)
	seed := a.Self().GossipAddr
	b := c.start(1, seed)
	dup := c.start(1, seed) // a second process given agent id 1
	waitFor(t, "agent 0 to see 3 members", func() bool { return len(a.Members()) == 3 })
	names := []string{b.Self().Name, dup.Self().Name}
	e := a.waitEvent(t, "duplicate report", func(e Event) bool { return e.Type == EventDuplicate })
	got := []string{e.Member.Name, e.Other.Name}
	slices.Sort(got)
	slices.Sort(names)
	if e.Member.ID != 1 || e.Other.ID != 1 || !slices.Equal(got, names) {
		t.Errorf("duplicate event %+v, want agent 1 as %v", e, names)
	}
	// Two addresses: not a restart, and said loudly.
	if e.Restarted() || !strings.Contains(c.logs.String(), "level=ERROR msg=\"two live members claim one agent id") {
		t.Errorf("two processes with one id: Restarted() = %v; logs:\n%s", e.Restarted(), c.logs.String())
	}
	restart := Event{Type: EventDuplicate, Member: Member{ID: 1, GossipAddr: "127.0.0.1:7946"}, Other: Member{ID: 1, GossipAddr: "127.0.0.1:7946"}}
	if !restart.Restarted() {
		t.Error("two incarnations on one gossip address are not a restart")
	}
	// Both claimants stay listed, adjacent, the later start first.
	ms := a.Members()
	if len(ms) != 3 || ms[1].ID != 1 || ms[2].ID != 1 || ms[1].Started.Before(ms[2].Started) {
		t.Errorf("members %+v: want both agent 1 entries, newest first", ms)
	}
	// The claimant that came second hears that someone holds its id.
	dup.waitEvent(t, "duplicate report naming itself", func(e Event) bool {
		return e.Type == EventDuplicate && e.Other.Name == dup.Self().Name && e.Member.Name == b.Self().Name
	})
	if n := a.countEvents(func(e Event) bool { return e.Type == EventDuplicate }); n != 1 {
		t.Errorf("the duplicate was reported %d times, want once", n)
	}
}

func TestStartRefuses(t *testing.T) {
	c := newCluster(t)
	good := testSelf(1)
	for _, tc := range []struct {
		name   string
		cfg    func(*Config)
		self   func(*Member)
		target error
		want   string
	}{
		{name: "meta over 512 bytes", self: func(m *Member) { m.Rack = strings.Repeat("r", 500) },
			target: ErrMetaTooLarge, want: "limit is 512"},
		{name: "negative id", self: func(m *Member) { m.ID = -1 }, want: "agent id -1"},
		{name: "no state", self: func(m *Member) { m.State = 0 }, want: "state"},
		{name: "no Kafka address", self: func(m *Member) { m.KafkaAddr = "" }, want: "Kafka address"},
		{name: "bad gossip address", cfg: func(c *Config) { c.GossipAddr = "localhost:0" }, want: "--gossip-addr"},
		{name: "bad seed", cfg: func(c *Config) { c.Join = []string{"127.0.0.1"} }, want: "--join"},
	} {
		cfg := c.config()
		if tc.cfg != nil {
			tc.cfg(&cfg)
		}
		self := good
		if tc.self != nil {
			tc.self(&self)
		}
		m, err := Start(cfg, self)
		if err == nil {
			m.Close()
			t.Errorf("%s: Start succeeded", tc.name)
			continue
		}
		if tc.target != nil && !errors.Is(err, tc.target) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.target)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.want)
		}
	}

	// An address in use.
	a := c.start(0)
	cfg := c.config()
	cfg.GossipAddr = a.Self().GossipAddr
	if m, err := Start(cfg, good); err == nil {
		m.Close()
		t.Error("Start on a bound port succeeded")
	} else if !strings.Contains(err.Error(), "--gossip-addr") {
		t.Errorf("port in use: error %q does not name --gossip-addr", err)
	}
}

func TestAdvertiseAddress(t *testing.T) {
	c := newCluster(t)
	cfg := c.config()
	cfg.AdvertiseAddr = "127.0.0.1:0" // port 0: the bound one
	m := c.startWith(cfg, 0)
	_, port, _ := net.SplitHostPort(m.Self().GossipAddr)
	if port == "0" || m.Self().GossipAddr != m.bound {
		t.Errorf("advertised %s, bound %s", m.Self().GossipAddr, m.bound)
	}
	// Joining one's own address, as with a seed list shared by every agent,
	// is skipped.
	if err := m.Join([]string{m.Self().GossipAddr}); err != nil {
		t.Fatal(err)
	}
	m.joinMu.Lock()
	seeds := len(m.seeds)
	m.joinMu.Unlock()
	if seeds != 0 {
		t.Errorf("own address kept as a seed")
	}
}

func TestCloseAndAfter(t *testing.T) {
	c := newCluster(t)
	m := c.start(0)
	ctx := context.Background()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case <-m.finished:
	case <-time.After(waitTimeout):
		t.Fatal("Events not closed by Close")
	}
	for name, err := range map[string]error{
		"SetState":  m.SetState(ctx, StateActive),
		"Leave":     m.Leave(ctx),
		"Broadcast": m.Broadcast("k", nil),
		"Join":      m.Join([]string{"127.0.0.1:1"}),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
}

// TestLabelKeepsClustersApart: a member of another cluster (another
// label) that is given this one's address as a seed is never merged in;
// one with the same label is.
func TestLabelKeepsClustersApart(t *testing.T) {
	c := newCluster(t)
	cfg := c.config()
	cfg.Label = "strata/cluster-a"
	a := c.startWith(cfg, 0)
	seed := a.Self().GossipAddr

	other := c.config(seed)
	other.Label = "strata/cluster-b"
	b := c.startWith(other, 1)
	same := c.config(seed)
	same.Label = "strata/cluster-a"
	a2 := c.startWith(same, 2)

	waitFor(t, "the same-label member joins", func() bool { return len(a.Members()) == 2 && len(a2.Members()) == 2 })
	// Let the other cluster's member try, and fail, to join through the
	// seed a few times, then check nothing merged.
	waitFor(t, "three failed join attempts by the other cluster's member", func() bool { return b.joinFailures.Load() >= 3 })
	for _, m := range []*member{a, a2} {
		for _, seen := range m.Members() {
			if seen.ID == 1 {
				t.Fatalf("agent %d merged a member of another cluster: %+v", m.Self().ID, m.Members())
			}
		}
	}
	if n := len(b.Members()); n != 1 {
		t.Fatalf("the other cluster's member sees %d members, want itself only", n)
	}
	long := LoopbackConfig()
	long.Label = string(make([]byte, 256))
	if err := long.Validate(); err == nil || !strings.Contains(err.Error(), "Label") {
		t.Errorf("a 256-byte label: %v", err)
	}
}

// TestStateSetWhileJoining: an agent announces a state while its join is
// still under way (the agent marks itself active as soon as it serves,
// and joining runs in the background). The others must see the new state
// soon, not only at the next full push/pull (set to an hour here, so that
// nothing repairs a lost update): a balancer that saw a serving agent as
// joining for 30 s moved its replicas away and back. The seed hears it
// from the agent's next join (the joiner joins again until it learns
// nothing new, and a join sends this agent's current state) or by gossip.
//
// memberlist v0.6.0's queue dropped such an update: the update replaced
// the agent's start-up alive message, the only one queued, and an alive
// message its join queued took its place (third_party/memberlist). The
// others saw the agent joining until push/pull; this test failed at once
// on it. A re-announce after each join worked around it for the agent's
// own message, but relays of it could still be dropped the same way.
func TestStateSetWhileJoining(t *testing.T) {
	c := newCluster(t)
	cfg := func(seeds ...string) Config {
		cfg := c.config(seeds...)
		cfg.PushPullInterval = time.Hour
		// Gossip is probabilistic: with LoopbackConfig's RetransmitMult of
		// 3, a member of a cluster of 4-9 passes an update to 3 random
		// others, and without push/pull a member that every holder missed
		// never hears it. An update set after the agent's last join reaches
		// the seed only so; this test is about the state set during the
		// join, not about fan-out, so it gossips each update more times.
		cfg.RetransmitMult = 8
		// 25 agents probing each other every 100 ms starve a loaded
		// 2-core machine under -race until they declare each other
		// failed; failure detection is not what this test is about.
		cfg.ProbeInterval, cfg.ProbeTimeout, cfg.SuspicionMult = time.Second, 500*time.Millisecond, 4
		return cfg
	}
	seed := c.startWith(cfg(), 0)
	addr := seed.Self().GossipAddr
	for id := int32(1); id <= 24; id++ {
		m := c.startWith(cfg(addr), id)
		// Part of the scenario, not synchronisation: varied pauses so
		// that some announcements land inside the join.
		time.Sleep(time.Duration(id%10) * 300 * time.Microsecond)
		if err := m.SetState(context.Background(), StateActive); err != nil {
			t.Fatalf("agent %d: SetState: %v", id, err)
		}
		name := m.Self().Name
		waitFor(t, fmt.Sprintf("agent 0 to see agent %d active", id), func() bool {
			i := slices.IndexFunc(seed.Members(), func(x Member) bool { return x.Name == name })
			return i >= 0 && seed.Members()[i].State == StateActive
		})
	}
}
