package netns

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary a probe server inside a namespace: it
// listens on the address the variable holds and answers each line "dial
// host:port" with "ok" or "fail", after trying that dial from inside.
const helperEnv = "STRATA_NETNS_PROBE"

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperEnv); addr != "" {
		probeServer(addr)
		return
	}
	os.Exit(m.Run())
}

func probeServer(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				target, ok := strings.CutPrefix(sc.Text(), "dial ")
				if !ok {
					return
				}
				answer := "ok"
				if d, err := net.DialTimeout("tcp", target, 500*time.Millisecond); err != nil {
					answer = "fail"
				} else {
					d.Close()
				}
				fmt.Fprintln(c, answer)
			}
		}()
	}
}

// TestCuts: three namespaces reach each other and the root namespace's
// store address; Cut, CutStore and Isolate stop exactly the traffic they
// name, and healing restores it.
func TestCuts(t *testing.T) {
	if err := Available(); err != nil {
		t.Fatalf("%v: the chaos harness's network faults need it", err)
	}
	nw, err := New(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := nw.Close(); err != nil {
			t.Error(err)
		}
	})
	const port = "7700"
	for i, h := range nw.Hosts() {
		cmd := nw.Command(i, os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"="+net.JoinHostPort(h.IP, port))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	storeLn, err := net.Listen("tcp", net.JoinHostPort(nw.StoreIP(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer storeLn.Close()
	go func() {
		for {
			c, err := storeLn.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	storeAddr := storeLn.Addr().String()

	probes := make([]*bufio.ReadWriter, 3)
	for i, h := range nw.Hosts() {
		var c net.Conn
		deadline := time.Now().Add(10 * time.Second)
		for c == nil {
			if c, err = net.DialTimeout("tcp", net.JoinHostPort(h.IP, port), time.Second); err != nil && time.Now().After(deadline) {
				t.Fatalf("the root namespace cannot reach host %d: %v", i, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		defer c.Close()
		probes[i] = bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))
	}
	reach := func(from int, to string) bool {
		t.Helper()
		fmt.Fprintf(probes[from], "dial %s\n", to)
		probes[from].Flush()
		line, err := probes[from].ReadString('\n')
		if err != nil {
			t.Fatalf("probe on host %d: %v", from, err)
		}
		return strings.TrimSpace(line) == "ok"
	}
	host := func(i int) string { return net.JoinHostPort(nw.Hosts()[i].IP, port) }
	expect := func(what string, want map[[2]int]bool, store map[int]bool) {
		t.Helper()
		for from := range 3 {
			for to := range 3 {
				if from != to {
					if got := reach(from, host(to)); got != want[[2]int{min(from, to), max(from, to)}] {
						t.Errorf("%s: host %d reaches host %d: %v", what, from, to, got)
					}
				}
			}
			if got := reach(from, storeAddr); got != store[from] {
				t.Errorf("%s: host %d reaches the store: %v", what, from, got)
			}
		}
	}
	all := map[[2]int]bool{{0, 1}: true, {0, 2}: true, {1, 2}: true}
	allStore := map[int]bool{0: true, 1: true, 2: true}
	expect("at first", all, allStore)

	must(t, nw.Cut(0, 1))
	must(t, nw.CutStore(2))
	expect("0-1 and 2-store cut", map[[2]int]bool{{0, 2}: true, {1, 2}: true}, map[int]bool{0: true, 1: true})
	must(t, nw.Heal(1, 0))
	must(t, nw.HealStore(2))
	expect("healed", all, allStore)

	must(t, nw.Isolate(1))
	expect("1 isolated", map[[2]int]bool{{0, 2}: true}, map[int]bool{0: true, 2: true})
	// Clients in the root namespace still reach an isolated host.
	if c, err := net.DialTimeout("tcp", host(1), time.Second); err != nil {
		t.Errorf("a client cannot reach the isolated host: %v", err)
	} else {
		c.Close()
	}
	must(t, nw.HealAll())
	expect("all healed", all, allStore)

	if err := nw.Cut(1, 1); err == nil {
		t.Error("a cut of a host from itself was accepted")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
