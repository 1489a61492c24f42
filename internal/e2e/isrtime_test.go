package e2e

import (
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// isrLag is the --replica-lag-time-max of the ISR-by-time tests: short,
// yet far above a follower's long poll (500 ms), so an idle follower that
// fetches never comes near it.
const isrLag = 6 * time.Second

// isrSlack is what an ISR change may take past the lag: the leader's
// periodic check (every second at most), the CAS write, and the new state
// reaching the agent a test asks.
const isrSlack = 5 * time.Second

// TestClusterISRFollowerFrozenIdle (issue 31, item 6): on a topic with no
// traffic, so that every follower holds all the leader has, a follower
// frozen with SIGSTOP leaves the ISR of every partition within the lag
// limit plus a few seconds, as its peers' Metadata shows; continued
// (SIGCONT), it rejoins every ISR. It prints how long each took. With the
// fast failure detection of these tests gossip reports the frozen agent
// dead within two seconds or so, and its leaders remove it half a lag
// limit after its last fetch (the rule for ineligible followers), before
// the lag limit itself; TestClusterISRFollowerCutOffIdle is the case where
// only the lag limit can.
func TestClusterISRFollowerFrozenIdle(t *testing.T) {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil, "--replica-lag-time-max", isrLag.String())
	const topic, partitions = "idle", 6
	c.createTopic(topic, partitions, 3, nil)
	cl := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	for p := range int32(partitions) {
		r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "before-%d", p)}
		if err := cl.ProduceSync(ctxT(t, opTimeout), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close() // no traffic from here on

	const frozen = 2
	live := []int{0, 1}
	led := map[int32]bool{}
	for p := range int32(partitions) {
		leader, _, _, err := c.partitionState(0, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		led[p] = leader == frozen
	}
	c.agents[frozen].Pause()
	paused := time.Now()
	left := c.waitISRMembership(topic, partitions, frozen, live, false, paused, isrLag+isrSlack)
	var worst time.Duration
	for p := range int32(partitions) {
		role := "follower"
		if led[p] {
			role = "leader" // its partitions move to a live agent by election
		}
		t.Logf("%s-%d: agent %d (%s) left the ISR %v after SIGSTOP", topic, p, frozen, role, left[p].Round(time.Millisecond))
		if !led[p] {
			worst = max(worst, left[p])
		}
	}
	t.Logf("left every ISR it follows within %v (limit %v = lag %v + %v)", worst.Round(time.Millisecond), isrLag+isrSlack, isrLag, isrSlack)

	c.agents[frozen].Resume()
	resumed := time.Now()
	joined := c.waitISRMembership(topic, partitions, frozen, live, true, resumed, 30*time.Second)
	var last time.Duration
	for p := range int32(partitions) {
		t.Logf("%s-%d: agent %d rejoined the ISR %v after SIGCONT", topic, p, frozen, joined[p].Round(time.Millisecond))
		last = max(last, joined[p])
	}
	t.Logf("rejoined every ISR within %v of SIGCONT", last.Round(time.Millisecond))
}

// waitISRMembership waits until every live agent's Metadata lists agent in
// (member) or out of (!member) the ISR of each partition of topic, and
// returns for each partition how long after since that was first seen.
// It fails the test if some partition is not there within limit.
func (c *procCluster) waitISRMembership(topic string, partitions int32, agent int, live []int, member bool, since time.Time, limit time.Duration) map[int32]time.Duration {
	c.t.Helper()
	done := map[int32]time.Duration{}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var waiting []string
		for p := range partitions {
			if _, ok := done[p]; ok {
				continue
			}
			var views []string
			for _, i := range live {
				_, _, isr, err := c.partitionState(i, topic, p)
				if err != nil || slices.Contains(isr, int32(agent)) != member {
					views = append(views, fmt.Sprintf("agent %d: ISR %v, err %v", i, isr, err))
				}
			}
			if len(views) == 0 {
				done[p] = time.Since(since)
				continue
			}
			waiting = append(waiting, fmt.Sprintf("%s-%d %v", topic, p, views))
		}
		if len(waiting) == 0 {
			return done
		}
		if time.Since(since) > limit {
			c.t.Fatalf("agent %d in the ISR = %v not within %v: %v", agent, member, limit, waiting)
		}
		<-tick.C
	}
}

// TestClusterISRFollowerCutOffIdle (issue 31, item 6) is the case gossip
// cannot see: the followers of a leader can no longer fetch from it (a
// proxy in front of its inter-agent listener drops every connection) while
// gossip still calls every agent alive. On a topic with no traffic both
// followers hold all the leader has, so only the time since their last
// fetch tells the leader they are gone: they leave the ISR of each
// partition it leads within the lag limit plus a few seconds, and rejoin
// once the path is back. Partitions led by the others keep a full ISR.
func TestClusterISRFollowerCutOffIdle(t *testing.T) {
	const n = 3
	proxies := make([]*tcpCut, n)
	for i := range proxies {
		proxies[i] = startTCPCut(t)
	}
	c := startProcClusterEach(t, n, "file://"+t.TempDir(), func(i int) testagent.Options {
		return testagent.Options{ExtraListeners: []string{"REPL"}, Advertised: map[string]string{"REPL": proxies[i].Addr()}}
	}, "--replica-lag-time-max", isrLag.String(),
		"--listener-security-protocol-map", "PLAINTEXT:PLAINTEXT,REPL:PLAINTEXT", "--inter-agent-listener", "REPL")
	for i, p := range proxies {
		p.SetTarget(c.agents[i].ListenerAddr("REPL"))
	}
	const topic, partitions = "idle-cut", 6
	c.createTopic(topic, partitions, 3, nil)
	cl := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	for p := range int32(partitions) {
		r := &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "before-%d", p)}
		if err := cl.ProduceSync(ctxT(t, opTimeout), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close() // no traffic from here on

	leader, _ := c.leaderIndex(topic, 0, -1, []int{0, 1, 2})
	var mine, others []int32
	for p := range int32(partitions) {
		l, _, _, err := c.partitionState(leader, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		if int(l) == leader {
			mine = append(mine, p)
		} else {
			others = append(others, p)
		}
	}
	proxies[leader].Cut()
	cut := time.Now()
	waitFor(t, fmt.Sprintf("agent %d's followers to leave the ISR of %s %v", leader, topic, mine), func() string {
		for _, p := range mine {
			_, _, isr, err := c.partitionState(leader, topic, p)
			if err != nil || !slices.Equal(isr, []int32{int32(leader)}) {
				if time.Since(cut) > isrLag+isrSlack {
					t.Fatalf("%s-%d: ISR %v (err %v) %v after the cut, want only the leader within %v", topic, p, isr, err, time.Since(cut), isrLag+isrSlack)
				}
				return fmt.Sprintf("%s-%d: ISR %v (err %v)", topic, p, isr, err)
			}
		}
		return ""
	})
	t.Logf("agent %d's followers left the ISR of %s %v %v after the cut (limit %v)", leader, topic, mine, time.Since(cut).Round(time.Millisecond), isrLag+isrSlack)
	for _, p := range others {
		l, _, isr, err := c.partitionState(leader, topic, p)
		if err != nil || len(isr) != n {
			t.Errorf("%s-%d (leader %d), whose followers fetch: ISR %v (err %v), want all %d", topic, p, l, isr, err, n)
		}
	}

	proxies[leader].Mend()
	mended := time.Now()
	waitFor(t, "the followers to rejoin the ISR", func() string {
		for _, p := range mine {
			_, _, isr, err := c.partitionState(leader, topic, p)
			if err != nil || len(isr) != n {
				return fmt.Sprintf("%s-%d: ISR %v (err %v)", topic, p, isr, err)
			}
		}
		return ""
	})
	t.Logf("they rejoined %v after the path was back", time.Since(mended).Round(time.Millisecond))
}

// tcpCut forwards TCP connections from a port of 127.0.0.1 to a target,
// until cut: then it closes every connection it carries and each new one
// at once, as a network that drops one path would, until mended. Its
// methods are safe for concurrent use; the test's cleanup closes it and
// waits for its goroutines.
type tcpCut struct {
	ln net.Listener
	wg sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	target string
	cut    bool
	conns  map[net.Conn]bool
}

func startTCPCut(t *testing.T) *tcpCut {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpCut{ln: ln, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

// Addr is where it listens.
func (p *tcpCut) Addr() string { return p.ln.Addr().String() }

// SetTarget sets where it forwards; until then connections are closed.
func (p *tcpCut) SetTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

// Cut closes every connection and refuses new ones until Mend.
func (p *tcpCut) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Mend forwards new connections again.
func (p *tcpCut) Mend() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *tcpCut) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward carries one connection until either side ends or a cut.
func (p *tcpCut) forward(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	p.mu.Lock()
	target, cut := p.target, p.cut
	p.mu.Unlock()
	if cut || target == "" {
		return
	}
	u, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(u, c)
		u.Close()
		c.Close()
	}()
	_, _ = io.Copy(c, u)
	c.Close()
	u.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}
