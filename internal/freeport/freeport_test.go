package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestLoopback: the ports are distinct, below the ephemeral range, and free
// for TCP and UDP once returned.
func TestLoopback(t *testing.T) {
	ports, err := Loopback(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d returned twice in %v", p, ports)
		}
		seen[p] = true
		if p < lowest || p >= pastHighest {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, pastHighest)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("port %d not free for TCP: %v", p, err)
		}
		l.Close()
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatalf("port %d not free for UDP: %v", p, err)
		}
		u.Close()
	}
}

// TestLoopbackSkipsTakenPorts: a port held by someone else is never chosen.
func TestLoopbackSkipsTakenPorts(t *testing.T) {
	var taken []net.Listener
	for p := lowest; p < lowest+2000; p++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			taken = append(taken, l)
		}
	}
	defer func() {
		for _, l := range taken {
			l.Close()
		}
	}()
	ports, err := Loopback(200)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		if p < lowest+2000 {
			t.Fatalf("port %d was held by this test and still chosen", p)
		}
	}
}
