package kafka

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
)

// TestAdmission: scripted connection openings and closings against the
// limits, each with the answer admit must give.
func TestAdmission(t *testing.T) {
	a1, a2, a3 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	t0 := time.Unix(1000, 0)
	type step struct {
		addr  netip.Addr
		at    time.Duration // since t0
		close bool          // release a connection of addr instead
		want  string
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{"per ip", Config{MaxConnections: 10, MaxConnectionsPerIP: 2}, []step{
			{addr: a1}, {addr: a1}, {addr: a1, want: refusedPerIP},
			{addr: a2}, {addr: a2}, {addr: a2, want: refusedPerIP},
			{addr: a1, close: true}, {addr: a1}, {addr: a1, want: refusedPerIP},
		}},
		{"overrides", Config{MaxConnections: 10, MaxConnectionsPerIP: 1, MaxConnectionsPerIPOverrides: ConnectionOverrides{a2: 3, a3: 0}}, []step{
			{addr: a1}, {addr: a1, want: refusedPerIP},
			{addr: a2}, {addr: a2}, {addr: a2}, {addr: a2, want: refusedPerIP},
			{addr: a3, want: refusedPerIP},
		}},
		{"total before per ip", Config{MaxConnections: 2, MaxConnectionsPerIP: 5}, []step{
			{addr: a1}, {addr: a2}, {addr: a3, want: refusedTotal}, {addr: a1, want: refusedTotal},
			{addr: a2, close: true}, {addr: a3},
		}},
		{"rate: a second's burst, then rate per second", Config{MaxConnections: 100, MaxConnectionsPerIP: 100, MaxConnectionCreationRate: 2}, []step{
			{addr: a1}, {addr: a2}, {addr: a3, want: refusedRate},
			{addr: a3, at: 400 * time.Millisecond, want: refusedRate},
			{addr: a3, at: 500 * time.Millisecond},
			{addr: a3, at: 600 * time.Millisecond, want: refusedRate},
			// A long pause refills the bucket to one second's worth, no more.
			{addr: a1, at: time.Hour}, {addr: a1, at: time.Hour}, {addr: a1, at: time.Hour, want: refusedRate},
		}},
		{"refused per ip spends no rate", Config{MaxConnections: 100, MaxConnectionsPerIP: 1, MaxConnectionCreationRate: 1}, []step{
			{addr: a1}, {addr: a1, want: refusedPerIP}, {addr: a1, want: refusedPerIP},
			{addr: a2, at: time.Second},
		}},
		{"unlimited rate", Config{MaxConnections: 100, MaxConnectionsPerIP: 100}, []step{
			{addr: a1}, {addr: a1}, {addr: a1}, {addr: a1}, {addr: a1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmission(tc.cfg)
			for i, s := range tc.steps {
				if s.close {
					a.release(s.addr)
					continue
				}
				if got := a.admit(s.addr, t0.Add(s.at)); got != s.want {
					t.Fatalf("step %d (%s at %v): %q, want %q", i, s.addr, s.at, got, s.want)
				}
			}
		})
	}
}

func TestConnectionOverrides(t *testing.T) {
	for _, tc := range []struct{ in, out, err string }{
		{in: "", out: ""},
		{in: "127.0.0.2:5, 10.1.2.3:0", out: "10.1.2.3:0,127.0.0.2:5"},
		{in: "[::1]:7,::ffff:10.0.0.1:2", out: "10.0.0.1:2,[::1]:7"},
		{in: "127.0.0.1", err: "want ip:count"},
		{in: "host.example:5", err: "want ip:count"},
		{in: "127.0.0.1:-1", err: "0 or more"},
		{in: "127.0.0.1:x", err: "0 or more"},
		{in: "127.0.0.1:1,127.0.0.1:2", err: "listed twice"},
	} {
		var o ConnectionOverrides
		err := o.Set(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Set(%q): %v, want an error saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || o.String() != tc.out {
			t.Errorf("Set(%q): %q, %v; want %q", tc.in, o.String(), err, tc.out)
		}
	}
}

// TestMaxConnectionsPerIP: over TCP, the connections past the per-address
// limit from 127.0.0.1 are closed at once and counted as per_ip, an
// override refuses 127.0.0.3 outright, and 127.0.0.2 is still served.
func TestMaxConnectionsPerIP(t *testing.T) {
	ln := listen(t)
	cfg := DefaultConfig()
	cfg.MaxConnectionsPerIP = 2
	cfg.MaxConnectionsPerIPOverrides = ConnectionOverrides{netip.MustParseAddr("127.0.0.3"): 0}
	srv := New(cfg, Backends{}, nil, NewMetrics(prometheus.NewRegistry()))
	serve(t, srv, ln)
	dialFrom := func(ip string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for i := range 2 {
		if !apiVersionsAnswered(dialFrom("127.0.0.1")) {
			t.Fatalf("connection %d from 127.0.0.1 not served within the limit", i)
		}
	}
	for range 3 {
		if apiVersionsAnswered(dialFrom("127.0.0.1")) {
			t.Fatal("a connection past the per-IP limit was served")
		}
	}
	if apiVersionsAnswered(dialFrom("127.0.0.3")) {
		t.Fatal("a connection from an address overridden to 0 was served")
	}
	if !apiVersionsAnswered(dialFrom("127.0.0.2")) {
		t.Fatal("another address is refused while 127.0.0.1 is at its limit")
	}
	if got := testutil.ToFloat64(srv.metrics.refusals.WithLabelValues(refusedPerIP)); got != 4 {
		t.Fatalf("refusals per_ip %v, want 4", got)
	}
	if got := testutil.ToFloat64(srv.metrics.refusals.WithLabelValues(refusedTotal)); got != 0 {
		t.Fatalf("refusals total %v, want 0", got)
	}
}

// TestMaxConnectionCreationRate: at one connection a second, of five
// opened back to back some are refused and counted as rate.
func TestMaxConnectionCreationRate(t *testing.T) {
	ln := listen(t)
	cfg := DefaultConfig()
	cfg.MaxConnectionCreationRate = 1
	srv := New(cfg, Backends{}, nil, NewMetrics(prometheus.NewRegistry()))
	serve(t, srv, ln)
	var conns []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	served := 0
	for _, c := range conns {
		if apiVersionsAnswered(c) {
			served++
		}
	}
	refused := testutil.ToFloat64(srv.metrics.refusals.WithLabelValues(refusedRate))
	if served < 1 || served == 5 || float64(served)+refused != 5 {
		t.Fatalf("served %d, refused for rate %v, of 5 opened at once at 1/s", served, refused)
	}
}

// apiVersionsAnswered sends ApiVersions v0 on c and reports whether it was
// answered.
func apiVersionsAnswered(c net.Conn) bool {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(kafkawire.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1, "")); err != nil {
		return false
	}
	_, err := kafkawire.ReadFrame(c, 1<<20)
	return err == nil
}
