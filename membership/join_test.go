package membership

import (
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// TestJoinAllAtOnce: five agents start together, each given the other four
// as seeds, and every seed refuses the first join (nothing answers on the
// seed addresses yet), as when a whole cluster is started at once. Once
// every agent has failed a join, the seeds answer; every agent must then
// see all five, by joining alone. Push/pull, the periodic full exchange
// that repairs a missed member eventually (30 s by default), is off, and
// each gossip message is sent once, so gossip cannot make up for a join
// that left a member out: before the joiner kept joining until it learned
// nothing new, 8 rounds in 30 failed this way. Run several rounds, since
// the outcome depends on the order in which the retries land.
func TestJoinAllAtOnce(t *testing.T) {
	const (
		agents = 5
		rounds = 10
		// bound is how long every agent may take to see every other once
		// the seeds answer: a few join round trips under -race on a loaded
		// 2-core machine, far below any push/pull interval.
		bound = 10 * time.Second
	)
	var times []time.Duration
	for round := range rounds {
		t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
			times = append(times, joinAllAtOnce(t, agents, bound))
		})
	}
	t.Logf("every agent saw all %d, after the seeds answered, in %v", agents, times)
}

// joinAllAtOnce runs one round of TestJoinAllAtOnce and returns how long
// the agents took to see each other once the seeds answered.
func joinAllAtOnce(t *testing.T, agents int, bound time.Duration) time.Duration {
	c := newCluster(t)
	// Each agent's seed address is a port nothing listens on yet; later a
	// forwarder on it passes the join's TCP stream to the agent. An
	// agent's own gossip port cannot be used: Start binds it before the
	// first join, so the agents started first would answer the others.
	seeds := make([]*seedGate, agents)
	for i := range seeds {
		seeds[i] = newSeedGate(t)
	}
	ms := make([]*member, agents)
	for i := range ms {
		var join []string
		for j, s := range seeds {
			if j != i {
				join = append(join, s.addr)
			}
		}
		cfg := c.config(join...)
		cfg.PushPullInterval, cfg.RetransmitMult = time.Hour, 1
		// A loaded machine answers pings late; a member wrongly declared
		// failed is not what this test is about.
		cfg.ProbeInterval, cfg.ProbeTimeout, cfg.SuspicionMult = time.Second, 500*time.Millisecond, 4
		ms[i] = c.startWith(cfg, int32(i))
	}
	waitFor(t, "every agent to fail its first join", func() bool {
		for _, m := range ms {
			if m.joinFailures.Load() == 0 {
				return false
			}
		}
		return true
	})
	start := time.Now()
	for i, s := range seeds {
		s.open(ms[i].Self().GossipAddr)
	}
	var took time.Duration
	for time.Since(start) < bound {
		converged := true
		for _, m := range ms {
			if len(m.Members()) != agents {
				converged = false
			}
		}
		if converged {
			took = time.Since(start)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if took == 0 {
		for _, m := range ms {
			t.Errorf("agent %d sees %v", m.Self().ID, memberNames(m))
		}
		t.Fatalf("the agents did not all see each other within %v of the seeds answering", bound)
	}
	return took
}

// seedGate is a seed address that refuses joins until open, then forwards
// each TCP connection to an agent's gossip address. A join is one TCP
// exchange (memberlist's push/pull), so TCP is all a seed needs; everything
// after the join goes to the addresses the members advertise. The port is
// held from the start, so no other test's agent can take it meanwhile.
type seedGate struct {
	addr   string
	l      net.Listener
	target chan string // receives the agent's address once, on open
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{} // forwarded connections, both sides
}

func newSeedGate(t *testing.T) *seedGate {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &seedGate{addr: l.Addr().String(), l: l, target: make(chan string, 1), conns: make(map[net.Conn]struct{})}
	t.Cleanup(g.close)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.serve()
	}()
	return g
}

// open makes the gate forward to target from now on.
func (g *seedGate) open(target string) { g.target <- target }

func (g *seedGate) serve() {
	target := ""
	for {
		in, err := g.l.Accept()
		if err != nil {
			return // closed
		}
		if target == "" {
			select {
			case target = <-g.target:
			default:
				// Refused: a reset, as from a port nothing listens on.
				_ = in.(*net.TCPConn).SetLinger(0)
				in.Close()
				continue
			}
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.forward(in, target)
		}()
	}
}

// close stops the gate and the connections it forwards.
func (g *seedGate) close() {
	g.l.Close()
	g.mu.Lock()
	for c := range g.conns {
		c.Close()
	}
	g.conns = nil
	g.mu.Unlock()
	g.wg.Wait()
}

// forward copies between in and a new connection to target until both
// directions end.
func (g *seedGate) forward(in net.Conn, target string) {
	out, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		in.Close()
		return
	}
	if !g.track(in, out) {
		return
	}
	defer g.untrack(in, out)
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(out, in)
	}()
	copyHalf(in, out)
	<-done
}

// track records open connections; it closes them and returns false when
// the gate is closing.
func (g *seedGate) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		g.conns[c] = struct{}{}
	}
	return true
}

func (g *seedGate) untrack(cs ...net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(g.conns, c)
	}
}

// copyHalf copies src to dst, then closes dst's write side so that the
// far end sees the EOF it would have seen without the forwarder.
func copyHalf(dst, src net.Conn) {
	_, _ = io.Copy(dst, src) // a reset ends the exchange, as it would without the forwarder
	_ = dst.(*net.TCPConn).CloseWrite()
}
