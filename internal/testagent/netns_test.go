package testagent

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/strata-streaming/strata/internal/netns"
)

// TestStartInNamespace: an agent started in a network namespace listens
// on the namespace's address, is reachable from here, and is the process
// the harness signals (ip netns exec execs it, so its PID is the agent's).
func TestStartInNamespace(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Fatalf("%v: the chaos harness's network faults need it", err)
	}
	nw, err := netns.New(1)
	if err != nil {
		t.Fatal(err)
	}
	h := nw.Hosts()[0]
	a := Start(t, Options{NetNS: h.NS, IP: h.IP, Env: []string{fakeEnv + "=normal"}})
	// Registered after Start's cleanup, so it runs first: the agent stops
	// before its namespace goes.
	t.Cleanup(func() {
		a.Stop()
		if err := nw.Close(); err != nil {
			t.Error(err)
		}
	})
	if host, _, _ := net.SplitHostPort(a.Addr()); host != h.IP {
		t.Fatalf("Kafka address %s, want one on %s", a.Addr(), h.IP)
	}
	c, err := net.Dial("tcp", a.Addr())
	if err != nil {
		t.Fatalf("dial the agent in its namespace: %v", err)
	}
	c.Close()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", a.PID()))
	self, _ := os.Executable()
	if err != nil || exe != self {
		t.Fatalf("the harness's PID runs %q (%v), want the agent %q", exe, err, self)
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
}
