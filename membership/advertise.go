package membership

// Which address an agent advertises for gossip. With --gossip-advertise-addr
// set, that one; bound to one IP, that IP; bound to every interface (the
// default ":7946"), an address of this machine, in this order:
//
//  1. a private address (RFC 6890), the default route's interface first:
//     memberlist's own choice, right on a LAN, a VPC or in a container;
//  2. a public address, for a host that has nothing else (a VPS with one
//     public IPv4, an IPv6-only host with a global address): the gossip
//     port is already bound there, so advertising it exposes nothing new;
//  3. loopback, only when the agent has no --join: it is alone, and only
//     agents on this machine could join it anyway (a laptop offline, a
//     container or network namespace with only lo). With --join the agent
//     refuses to start, since the agents it joins could not reach it back.
//
// Within each group the bound family comes first (IPv4 for ":7946" or
// "0.0.0.0", IPv6 for "[::]"); Go binds either as a dual-stack socket, so
// the other family is reachable too and follows.

import (
	"fmt"
	"net"

	sockaddr "github.com/hashicorp/go-sockaddr"
)

// hostAddrs is this machine's addresses that another machine could reach
// (up, not loopback or link-local), each list best first.
type hostAddrs struct {
	private, public []net.IP
	// err is why they could not be listed, if they could not.
	err error
}

// lookupHostAddrs lists the addresses with go-sockaddr, as memberlist does
// (it orders the default route's interface first, then IPv4 before IPv6,
// then smaller networks first).
func lookupHostAddrs() hostAddrs {
	var h hostAddrs
	private, err := sockaddr.GetPrivateInterfaces()
	if err != nil {
		h.err = err
		return h
	}
	// Public addresses matter only without a private one; each listing
	// runs `ip route` while it sorts, so the second is not made for nothing.
	var public sockaddr.IfAddrs
	if len(private) == 0 {
		if public, err = sockaddr.GetPublicInterfaces(); err != nil {
			h.err = err
		}
	}
	for _, list := range []struct {
		from sockaddr.IfAddrs
		to   *[]net.IP
	}{{private, &h.private}, {public, &h.public}} {
		for _, a := range list.from {
			if ip := sockaddr.ToIPAddr(a.SockAddr); ip != nil {
				*list.to = append(*list.to, *(*ip).NetIP())
			}
		}
	}
	return h
}

// pickAdvertiseIP chooses the IP to advertise for a listener bound to
// bind, an unspecified IP (every interface), from this machine's
// addresses. joining is whether --join names other agents. note, when not
// empty, is a log message saying why the choice is not the usual one.
func pickAdvertiseIP(gossipAddr string, bind net.IP, h hostAddrs, joining bool) (ip net.IP, note string, err error) {
	v4 := bind.To4() != nil
	ordered := func(ips []net.IP) []net.IP {
		var same, other []net.IP
		for _, ip := range ips {
			if (ip.To4() != nil) == v4 {
				same = append(same, ip)
			} else {
				other = append(other, ip)
			}
		}
		return append(same, other...)
	}
	if ips := ordered(h.private); len(ips) > 0 {
		return ips[0], "", nil
	}
	if ips := ordered(h.public); len(ips) > 0 {
		return ips[0], "gossip advertises a public address: this machine has no private one", nil
	}
	why := "only loopback"
	if h.err != nil {
		why = fmt.Sprintf("listing them failed: %v", h.err)
	}
	if joining {
		return nil, "", fmt.Errorf("membership: --gossip-addr %s binds every interface and this machine has no address the --join agents could reach it at (%s): set --gossip-advertise-addr to the ip:port they reach this agent at", gossipAddr, why)
	}
	loopback := net.IPv4(127, 0, 0, 1).To4()
	if !v4 {
		loopback = net.IPv6loopback
	}
	return loopback, fmt.Sprintf("gossip advertises loopback: this agent has no --join and this machine no address other machines could reach (%s), so only agents on this machine can join it", why), nil
}

// advertiseAddr decides the ip:port other agents reach this one at; note
// is as pickAdvertiseIP's.
func advertiseAddr(cfg Config, bind net.TCPAddr, boundPort int) (ip net.IP, port int, note string, err error) {
	if cfg.AdvertiseAddr != "" {
		ip, p, _ := parseAdvertiseAddr(cfg.AdvertiseAddr) // checked by Validate
		if p == 0 {
			p = boundPort
		}
		return ip, p, "", nil
	}
	if !bind.IP.IsUnspecified() {
		return bind.IP, boundPort, "", nil
	}
	ip, note, err = pickAdvertiseIP(cfg.GossipAddr, bind.IP, lookupHostAddrs(), len(cfg.Join) > 0)
	return ip, boundPort, note, err
}
