// Package freeport chooses loopback ports for tests that must name a port
// before a child process binds it: an agent's Kafka, HTTP and gossip ports,
// MinIO's, a script's.
//
// The usual trick, listening on ":0" and closing, picks a port from the
// kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768-60999 by
// default), which the kernel hands out again at once to any other process's
// ":0" listener or outgoing connection. With test packages running side by
// side that happened between the choice and the bind often enough to fail
// CI. The ports here come from below that range, where only a process that
// names the number itself can take one, and are checked free for TCP and UDP
// (gossip uses both on one number).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"
)

// The range chosen from: above the well-known and most registered service
// ports a test machine runs, below the default ephemeral range.
const (
	lowest      = 20000
	pastHighest = 32768
)

// Loopback returns n distinct ports that were free on 127.0.0.1 for both TCP
// and UDP a moment ago.
func Loopback(n int) ([]int, error) {
	var ports []int
	var held []func() error
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("freeport: found only %d of %d free ports in [%d, %d)", len(ports), n, lowest, pastHighest)
		}
		port := lowest + rng.IntN(pastHighest-lowest)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		held = append(held, l.Close) // held until the end, so it is not chosen twice
		u, err := net.ListenPacket("udp", addr)
		if err != nil {
			continue
		}
		held = append(held, u.Close)
		ports = append(ports, port)
	}
	return ports, nil
}
