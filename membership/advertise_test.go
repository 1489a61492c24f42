package membership

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestPickAdvertiseIP: what an agent bound to every interface advertises,
// by the addresses its machine has and whether it joins others.
func TestPickAdvertiseIP(t *testing.T) {
	ips := func(ss ...string) []net.IP {
		var out []net.IP
		for _, s := range ss {
			out = append(out, net.ParseIP(s))
		}
		return out
	}
	v4, v6 := net.IPv4zero, net.IPv6unspecified
	for _, tc := range []struct {
		name    string
		bind    net.IP
		host    hostAddrs
		joining bool
		want    string // the IP, or what the error must say
		noted   bool   // logged at info as an unusual choice
		wantErr bool
	}{
		{name: "private IPv4", bind: v4, host: hostAddrs{private: ips("10.0.0.5", "172.17.0.1"), public: ips("203.0.113.7")},
			want: "10.0.0.5"},
		{name: "private beats public when joining", bind: v4, joining: true,
			host: hostAddrs{private: ips("192.168.1.4"), public: ips("203.0.113.7")}, want: "192.168.1.4"},
		{name: "only a public IPv4", bind: v4, host: hostAddrs{public: ips("203.0.113.7")}, want: "203.0.113.7", noted: true},
		{name: "only a public IPv4, joining", bind: v4, joining: true, host: hostAddrs{public: ips("203.0.113.7")},
			want: "203.0.113.7", noted: true},
		{name: "IPv4 bind prefers IPv4", bind: v4, host: hostAddrs{private: ips("fd00::2", "10.1.2.3")}, want: "10.1.2.3"},
		{name: "IPv6 bind prefers IPv6", bind: v6, host: hostAddrs{private: ips("10.1.2.3", "fd00::2")}, want: "fd00::2"},
		{name: "IPv6-only host, global address", bind: v4, host: hostAddrs{public: ips("2001:db8:1::5")},
			want: "2001:db8:1::5", noted: true},
		{name: "IPv6-only host, ULA", bind: v4, host: hostAddrs{private: ips("fd12::5"), public: ips("2001:db8:1::5")},
			want: "fd12::5"},
		{name: "loopback only, alone", bind: v4, want: "127.0.0.1", noted: true},
		{name: "loopback only, alone, IPv6 bind", bind: v6, want: "::1", noted: true},
		{name: "listing failed, alone", bind: v4, host: hostAddrs{err: errors.New("no netlink")}, want: "127.0.0.1", noted: true},
		{name: "loopback only, joining", bind: v4, joining: true, want: "--gossip-advertise-addr", wantErr: true},
		{name: "listing failed, joining", bind: v4, joining: true, host: hostAddrs{err: errors.New("no netlink")},
			want: "no netlink", wantErr: true},
	} {
		ip, note, err := pickAdvertiseIP(":7946", tc.bind, tc.host, tc.joining)
		if tc.wantErr {
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--join") {
				t.Errorf("%s: %v, %v; want an error naming --join and saying %q", tc.name, ip, err, tc.want)
			}
			continue
		}
		if err != nil || ip.String() != tc.want || (note != "") != tc.noted {
			t.Errorf("%s: %v, note %q, %v; want %s (noted %v)", tc.name, ip, note, err, tc.want, tc.noted)
		}
	}
}

// TestStartBoundToEveryIPv6Interface: "[::]" starts (it used to need
// --gossip-advertise-addr) and advertises a real address of this machine
// with the bound port.
func TestStartBoundToEveryIPv6Interface(t *testing.T) {
	c := newCluster(t)
	cfg := c.config()
	cfg.GossipAddr = "[::]:0"
	m := c.startWith(cfg, 0)
	host, port, err := net.SplitHostPort(m.Self().GossipAddr)
	ip := net.ParseIP(host)
	if err != nil || ip == nil || ip.IsUnspecified() || port == "0" || !strings.HasSuffix(m.bound, ":"+port) {
		t.Fatalf("advertised %s, bound %s", m.Self().GossipAddr, m.bound)
	}
}
