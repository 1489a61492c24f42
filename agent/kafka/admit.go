package kafka

// Connection admission: the limits a new connection must pass before it is
// served (Kafka's max.connections, max.connections.per.ip with its
// overrides, and max.connection.creation.rate).

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reasons a connection is refused, the values of the reason label of
// strata_kafka_connections_refused_total.
const (
	refusedTotal = "total"  // MaxConnections open
	refusedPerIP = "per_ip" // MaxConnectionsPerIP (or its override) open from the client's address
	refusedRate  = "rate"   // MaxConnectionCreationRate reached
)

// admission tracks open connections by client address and decides whether
// a new one may be served. It does no I/O and reads no clock: the caller
// passes the time, and holds the lock that guards it (Server.mu).
type admission struct {
	maxTotal  int
	perIP     int
	overrides ConnectionOverrides
	rate      float64 // connections per second; 0 is unlimited

	open   int
	byAddr map[netip.Addr]int
	// A token bucket of up to one second's worth of connections (at least
	// one): a burst that size is admitted at once, then rate per second.
	tokens float64
	filled time.Time
}

func newAdmission(c Config) *admission {
	return &admission{maxTotal: c.MaxConnections, perIP: c.MaxConnectionsPerIP, overrides: c.MaxConnectionsPerIPOverrides,
		rate: float64(c.MaxConnectionCreationRate), byAddr: map[netip.Addr]int{}, tokens: max(float64(c.MaxConnectionCreationRate), 1)}
}

// admit counts a connection from addr opened at now and returns "", or
// refuses it and returns the reason, counting nothing. The limits are
// checked in order total, per address, rate, so that a connection refused
// for one of the first two spends none of the rate.
func (a *admission) admit(addr netip.Addr, now time.Time) string {
	if a.open >= a.maxTotal {
		return refusedTotal
	}
	limit, ok := a.overrides[addr]
	if !ok {
		limit = a.perIP
	}
	if a.byAddr[addr] >= limit {
		return refusedPerIP
	}
	if a.rate > 0 {
		if !a.filled.IsZero() && now.After(a.filled) {
			a.tokens = min(a.tokens+now.Sub(a.filled).Seconds()*a.rate, max(a.rate, 1))
		}
		a.filled = now
		if a.tokens < 1 {
			return refusedRate
		}
		a.tokens--
	}
	a.open++
	a.byAddr[addr]++
	return ""
}

// release uncounts a connection admit counted.
func (a *admission) release(addr netip.Addr) {
	a.open--
	if a.byAddr[addr]--; a.byAddr[addr] <= 0 {
		delete(a.byAddr, addr)
	}
}

// clientAddr is the IP address of a connection's client, IPv4-mapped IPv6
// addresses as IPv4, so that one client counts once whichever the listener
// reports.
func clientAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	return netip.Addr{} // not TCP (tests on pipes): one shared bucket
}

// ConnectionOverrides is max.connections.per.ip.overrides: per client
// address, the most connections open at once, in place of
// MaxConnectionsPerIP; 0 refuses the address. As a flag (a pflag.Value) it
// reads "ip:count,ip:count", an IPv6 address in brackets ("[::1]:5").
// Unlike Kafka's, it takes no host names: the limit is on the address a
// connection comes from, and a name resolved at start would pin whatever
// it resolved to then.
type ConnectionOverrides map[netip.Addr]int

// Set parses s, replacing any earlier value.
func (o *ConnectionOverrides) Set(s string) error {
	out := ConnectionOverrides{}
	if strings.TrimSpace(s) != "" {
		for _, entry := range strings.Split(s, ",") {
			entry = strings.TrimSpace(entry)
			i := strings.LastIndex(entry, ":")
			if i < 0 {
				return fmt.Errorf("%q: want ip:count", entry)
			}
			host, count := strings.TrimSuffix(strings.TrimPrefix(entry[:i], "["), "]"), entry[i+1:]
			addr, err := netip.ParseAddr(host)
			if err != nil {
				return fmt.Errorf("%q: want ip:count: %v", entry, err)
			}
			n, err := strconv.Atoi(count)
			if err != nil || n < 0 {
				return fmt.Errorf("%q: the count must be a whole number, 0 or more", entry)
			}
			addr = addr.Unmap().WithZone("") // clientAddr drops zones too
			if _, dup := out[addr]; dup {
				return fmt.Errorf("%q: %s is listed twice", entry, addr)
			}
			out[addr] = n
		}
	}
	*o = out
	return nil
}

// String is the setting in the form Set reads, addresses in order.
func (o *ConnectionOverrides) String() string {
	if o == nil {
		return ""
	}
	var parts []string
	for _, addr := range slices.SortedFunc(maps.Keys(*o), netip.Addr.Compare) {
		host := addr.String()
		if addr.Is6() {
			host = "[" + host + "]"
		}
		parts = append(parts, host+":"+strconv.Itoa((*o)[addr]))
	}
	return strings.Join(parts, ",")
}

// Type names the flag's value in help.
func (o *ConnectionOverrides) Type() string { return "ip:count,..." }
