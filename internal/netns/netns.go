// Package netns gives a test its own small network: one Linux network
// namespace per host, all on one bridge that the test creates, so that the
// chaos harness (issue 8) can cut real connections between agents, and
// between an agent and the store, while the kernel, not a proxy, carries
// the traffic.
//
//	root namespace (the test)          bridge strb<pid>, 10.213.S.0/24
//	  10.213.S.1  clients  ─┐
//	  10.213.S.2  store    ─┤
//	                        ├── veth ── namespace 0: 10.213.S.10  (agent 0)
//	                        ├── veth ── namespace 1: 10.213.S.11  (agent 1)
//	                        └── ...
//
// A cut is a pair of blackhole routes, one in each namespace involved:
// nothing but iproute2 is needed (this machine's kernel has no tc actions
// or netfilter modules to load), and traffic between the others flows on.
// The store has an address of its own so that an agent can lose the store
// and keep its clients.
//
// Creating namespaces needs root (CAP_NET_ADMIN); Available says whether
// this process can. Every name carries the process id, so that packages
// testing at once do not collide; Close removes it all.
package netns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Network is a bridge, the root namespace's two addresses on it, and the
// hosts' namespaces.
type Network struct {
	bridge string
	prefix string // "10.213.S."
	hosts  []Host

	mu   sync.Mutex
	cuts map[[2]int]bool // host pairs cut; -1 is the store
}

// Host is one namespace on the network.
type Host struct {
	// NS is the namespace's name, for `ip netns exec`.
	NS string
	// IP is the host's address, reachable from the root namespace and
	// from the other hosts.
	IP string
	// veth is the root namespace's end of the host's link.
	veth string
}

// store is the pseudo host index that stands for the store's address in
// cuts.
const store = -1

// Available reports why this process cannot create namespaces, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("netns: needs root (CAP_NET_ADMIN)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("netns: iproute2's ip command: %w", err)
	}
	return nil
}

// New creates a network of n hosts. On error, whatever was created is
// removed again.
func New(n int) (_ *Network, err error) {
	if err := Available(); err != nil {
		return nil, err
	}
	if n < 1 || n > 200 {
		return nil, fmt.Errorf("netns: %d hosts: want 1 to 200", n)
	}
	pid := os.Getpid()
	// The third octet varies with the pid so that two test processes on
	// one machine get different subnets as well as different names.
	nw := &Network{
		bridge: fmt.Sprintf("strb%d", pid),
		prefix: fmt.Sprintf("10.213.%d.", 16+pid%224),
		cuts:   map[[2]int]bool{},
	}
	defer func() {
		if err != nil {
			nw.Close()
		}
	}()
	for _, c := range [][]string{
		{"link", "add", nw.bridge, "type", "bridge"},
		{"addr", "add", nw.ClientIP() + "/24", "dev", nw.bridge},
		{"addr", "add", nw.StoreIP() + "/24", "dev", nw.bridge},
		{"link", "set", nw.bridge, "up"},
	} {
		if err := ip(c...); err != nil {
			return nil, err
		}
	}
	for i := range n {
		h := Host{NS: fmt.Sprintf("strata%d-%d", pid, i), IP: fmt.Sprintf("%s%d", nw.prefix, 10+i), veth: fmt.Sprintf("s%dh%d", pid, i)}
		inner := fmt.Sprintf("s%dn%d", pid, i)
		nw.hosts = append(nw.hosts, h)
		for _, c := range [][]string{
			{"netns", "add", h.NS},
			{"link", "add", h.veth, "type", "veth", "peer", "name", inner},
			{"link", "set", h.veth, "master", nw.bridge},
			{"link", "set", h.veth, "up"},
			{"link", "set", inner, "netns", h.NS},
			{"-n", h.NS, "addr", "add", h.IP + "/24", "dev", inner},
			{"-n", h.NS, "link", "set", inner, "up"},
			{"-n", h.NS, "link", "set", "lo", "up"},
		} {
			if err := ip(c...); err != nil {
				return nil, err
			}
		}
	}
	return nw, nil
}

// Hosts are the network's hosts, in the order created.
func (nw *Network) Hosts() []Host { return nw.hosts }

// ClientIP is the root namespace's address that clients connect from.
func (nw *Network) ClientIP() string { return nw.prefix + "1" }

// StoreIP is the root namespace's address for the store: a server that
// should be cut off with CutStore listens on it.
func (nw *Network) StoreIP() string { return nw.prefix + "2" }

// Command runs name with args inside host i's namespace.
func (nw *Network) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", nw.hosts[i].NS, name}, args...)...)
}

// Cut stops all traffic between hosts i and j, both ways; connections
// between them time out as on a real network partition.
func (nw *Network) Cut(i, j int) error { return nw.setCut(i, j, true) }

// Heal undoes Cut.
func (nw *Network) Heal(i, j int) error { return nw.setCut(i, j, false) }

// CutStore stops all traffic between host i and the store's address.
func (nw *Network) CutStore(i int) error { return nw.setCut(i, store, true) }

// HealStore undoes CutStore.
func (nw *Network) HealStore(i int) error { return nw.setCut(i, store, false) }

// Isolate cuts host i from every other host and from the store; only the
// root namespace's clients still reach it.
func (nw *Network) Isolate(i int) error {
	for j := range nw.hosts {
		if j != i {
			if err := nw.Cut(i, j); err != nil {
				return err
			}
		}
	}
	return nw.CutStore(i)
}

// HealAll removes every cut.
func (nw *Network) HealAll() error {
	nw.mu.Lock()
	pairs := make([][2]int, 0, len(nw.cuts))
	for p := range nw.cuts {
		pairs = append(pairs, p)
	}
	nw.mu.Unlock()
	var errs []error
	for _, p := range pairs {
		errs = append(errs, nw.setCut(p[0], p[1], false))
	}
	return errors.Join(errs...)
}

// setCut adds or removes the blackhole routes of a cut. The store has no
// namespace of its own: its side of the cut is the route in host i's,
// which drops i's packets to it, and with them the replies to anything the
// store sends.
func (nw *Network) setCut(i, j int, cut bool) error {
	if i == j || i < 0 || i >= len(nw.hosts) || j < store || j >= len(nw.hosts) {
		return fmt.Errorf("netns: cut between %d and %d: no such pair", i, j)
	}
	if j != store && j < i {
		i, j = j, i
	}
	key := [2]int{i, j}
	nw.mu.Lock()
	defer nw.mu.Unlock()
	if nw.cuts[key] == cut {
		return nil
	}
	op := "add"
	if !cut {
		op = "del"
	}
	routes := [][2]string{{nw.hosts[i].NS, nw.StoreIP()}}
	if j != store {
		routes = [][2]string{{nw.hosts[i].NS, nw.hosts[j].IP}, {nw.hosts[j].NS, nw.hosts[i].IP}}
	}
	for _, r := range routes {
		if err := ip("-n", r[0], "route", op, "blackhole", r[1]+"/32"); err != nil {
			return err
		}
	}
	if cut {
		nw.cuts[key] = true
	} else {
		delete(nw.cuts, key)
	}
	return nil
}

// Close removes the namespaces, their links and the bridge. Processes
// still running in a namespace keep it alive until they exit; stop them
// first.
func (nw *Network) Close() error {
	var errs []error
	for _, h := range nw.hosts {
		errs = append(errs, ip("netns", "del", h.NS))
		// Deleting the namespace deletes the pair; this is for a host whose
		// link was made but not yet moved.
		_ = ip("link", "del", h.veth)
	}
	if nw.bridge != "" {
		errs = append(errs, ip("link", "del", nw.bridge))
	}
	return errors.Join(errs...)
}

// ip runs one iproute2 command.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netns: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
