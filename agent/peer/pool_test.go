package peer

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/internal/testwait"
)

// acceptCounter is a TCP listener that counts the connections it accepts
// and how many of them are still open (the pool's requests here never
// touch the wire: fn stands in for them).
type acceptCounter struct {
	ln       net.Listener
	accepted atomic.Int64
	open     atomic.Int64
}

func newAcceptCounter(t *testing.T) *acceptCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &acceptCounter{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			a.accepted.Add(1)
			a.open.Add(1)
			wg.Go(func() {
				defer a.open.Add(-1)
				buf := make([]byte, 1)
				c.Read(buf) // returns when the pool closes its end
				c.Close()
			})
		}
	})
	return a
}

// acceptedSettled is how many connections a has accepted once the count
// has reached want or stopped at another value for a while: a dial
// returns before the accept is counted.
func (a *acceptCounter) acceptedSettled(want int64) int64 {
	testwait.Poll(2*time.Second, func() bool { return a.accepted.Load() == want })
	return a.accepted.Load()
}

func newTestPool(t *testing.T, maxConns int) *Pool {
	t.Helper()
	cfg := DefaultPoolConfig()
	cfg.Self, cfg.MaxConnsPerPeer = 1, maxConns
	p, err := NewPool(cfg, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// TestPeerPoolReusesAndBounds: sequential requests share one connection;
// concurrent ones never hold more than MaxConnsPerPeer; an answer with an
// error code keeps the connection, a failed connection is replaced.
func TestPeerPoolReusesAndBounds(t *testing.T) {
	srv := newAcceptCounter(t)
	p := newTestPool(t, 3)
	addr := srv.ln.Addr().String()
	ctx := t.Context()
	for range 10 {
		if err := p.Do(ctx, 2, addr, func(*Client) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	answered := fmt.Errorf("peer: %w", kerr.NotLeaderForPartition)
	if err := p.Do(ctx, 2, addr, func(*Client) error { return answered }); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}
	if n := srv.acceptedSettled(1); n != 1 {
		t.Fatalf("11 sequential requests dialled %d connections, want 1", n)
	}

	var inFn, most atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() {
			err := p.Do(ctx, 2, addr, func(*Client) error {
				n := inFn.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				<-release
				inFn.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	testwait.Until(t, 10*time.Second, func() bool { return inFn.Load() == 3 }, "three requests under way")
	close(release)
	wg.Wait()
	if most.Load() != 3 || srv.acceptedSettled(3) != 3 {
		t.Fatalf("12 concurrent requests: %d at once on %d connections, want 3 on 3", most.Load(), srv.accepted.Load())
	}

	broken := errors.New("connection reset")
	if err := p.Do(ctx, 2, addr, func(*Client) error { return broken }); !errors.Is(err, broken) {
		t.Fatalf("Do returned %v", err)
	}
	testwait.Until(t, 10*time.Second, func() bool { return srv.open.Load() == 2 }, "the failed connection closed")
	for range 5 {
		if err := p.Do(ctx, 2, addr, func(*Client) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.acceptedSettled(3); n != 3 {
		t.Fatalf("after a failure %d connections were dialled in all, want the 3 still (2 idle ones left)", n)
	}
}

// TestPeerPoolForgetAndClose: Forget closes an agent's idle connections
// (a request after it dials again); Close closes the rest and fails
// later requests.
func TestPeerPoolForgetAndClose(t *testing.T) {
	srv := newAcceptCounter(t)
	p := newTestPool(t, 2)
	addr := srv.ln.Addr().String()
	ctx := t.Context()
	do := func() error { return p.Do(ctx, 7, addr, func(*Client) error { return nil }) }
	if err := do(); err != nil {
		t.Fatal(err)
	}
	p.Forget(7)
	testwait.Until(t, 10*time.Second, func() bool { return srv.open.Load() == 0 }, "Forget closed the idle connection")
	if err := do(); err != nil {
		t.Fatal(err)
	}
	if n := srv.acceptedSettled(2); n != 2 {
		t.Fatalf("%d connections dialled, want 2 (one after Forget)", n)
	}
	// A request to an agent at a new address (it restarted elsewhere)
	// does not use the connection to the old one.
	other := newAcceptCounter(t)
	if err := p.Do(ctx, 7, other.ln.Addr().String(), func(c *Client) error {
		if c.Addr() != other.ln.Addr().String() {
			return fmt.Errorf("connection to %s", c.Addr())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, func() bool { return srv.open.Load() == 0 }, "the stale connection closed")
	p.Close()
	p.Close()
	testwait.Until(t, 10*time.Second, func() bool { return other.open.Load() == 0 }, "Close closed the idle connection")
	if err := do(); !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
}
