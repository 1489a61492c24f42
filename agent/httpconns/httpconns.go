// Package httpconns bounds the connections an HTTP server holds open, so
// that clients which open keep-alive connections and leave them idle cannot
// take every file descriptor of the process (issue 19: 2,030 idle ones did,
// under a 2,048-descriptor limit, and the agent stopped serving Kafka).
//
// A Listener wraps the server's net.Listener and counts the connections it
// has handed out until they are closed. Past Max open connections a new one
// takes the place of the connection that has been idle (between requests
// on a keep-alive connection) the longest, which is closed; only when none
// is idle is the new connection closed as soon as it is accepted, and
// counted. Closing an idle keep-alive connection is always allowed in
// HTTP/1.1 (a client retries its request on a new one), and it is what
// keeps /healthz and /metrics answering while an attacker holds Max idle
// connections; nginx reuses idle keep-alive connections the same way when
// it runs short of them. A connection that never sends a request is not
// idle: http.Server closes it after its ReadHeaderTimeout.
//
// The Kafka listener's limits (agent/kafka, admit.go) refuse a connection
// over a limit instead: a Kafka client's idle connection is one it means to
// use, and its requests are not retried on another connection by default.
//
// The server must report connection states to ConnState (http.Server's
// ConnState field); a Listener is safe for concurrent use.
package httpconns

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// refusalLogInterval is the least time between two warnings about refused
// connections: a flood must not flood the log.
const refusalLogInterval = 10 * time.Second

// Listener is a net.Listener that holds at most Max connections open; see
// the package doc.
type Listener struct {
	net.Listener
	max    int
	logger *slog.Logger

	refused, evicted prometheus.Counter

	mu   sync.Mutex
	open int
	// idle holds the *conn that are idle, the longest idle first.
	idle        *list.List
	lastRefusal time.Time
}

// New wraps ln so that at most max connections are open at once (max must
// be at least 1), and registers the listener's metrics with reg.
func New(ln net.Listener, max int, logger *slog.Logger, reg prometheus.Registerer) *Listener {
	l := &Listener{Listener: ln, max: max, logger: logger, idle: list.New(),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_http_connections_refused_total",
			Help: "HTTP connections closed as soon as accepted because --http-max-connections were open and none of them was idle."}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_http_connections_evicted_total",
			Help: "Idle keep-alive HTTP connections closed to make room for a new connection when --http-max-connections were open."}),
	}
	reg.MustRegister(l.refused, l.evicted, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "strata_http_connections_open",
		Help: "HTTP connections open, at most --http-max-connections."}, func() float64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return float64(l.open)
	}))
	return l
}

// conn is a connection the Listener handed out.
type conn struct {
	net.Conn
	l *Listener
	// Guarded by l.mu: released once the connection no longer counts
	// (closed, or evicted), and its place in l.idle while it is idle.
	released bool
	idleAt   *list.Element
}

// Accept returns the next connection within the limit, closing (and
// counting) those over it.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if out := l.admit(c); out != nil {
			return out, nil
		}
	}
}

// admit counts c in, evicting the longest-idle connection if the limit is
// reached, or closes c and returns nil when nothing can make room.
func (l *Listener) admit(c net.Conn) net.Conn {
	l.mu.Lock()
	var victim *conn
	if l.open >= l.max {
		if front := l.idle.Front(); front != nil {
			victim = front.Value.(*conn)
			l.releaseLocked(victim)
		}
	}
	if l.open >= l.max {
		now := time.Now()
		warn := now.Sub(l.lastRefusal) >= refusalLogInterval
		if warn {
			l.lastRefusal = now
		}
		l.mu.Unlock()
		l.refused.Inc() // before the close a client may see
		c.Close()
		if warn {
			l.logger.Warn("refusing HTTP connections", "client", c.RemoteAddr().String(), "http_max_connections", l.max)
		}
		return nil
	}
	l.open++
	l.mu.Unlock()
	if victim != nil {
		l.evicted.Inc()
		// The server's read on it fails and its goroutine ends; its own
		// Close then finds it released already.
		victim.Conn.Close()
	}
	return &conn{Conn: c, l: l}
}

// releaseLocked stops counting c; l.mu is held.
func (l *Listener) releaseLocked(c *conn) {
	if c.released {
		return
	}
	c.released = true
	l.open--
	if c.idleAt != nil {
		l.idle.Remove(c.idleAt)
		c.idleAt = nil
	}
}

// Close closes the connection and stops counting it; it may be called
// twice.
func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// ConnState is the http.Server ConnState hook: it keeps the list of idle
// connections that Accept may evict.
func (l *Listener) ConnState(nc net.Conn, state http.ConnState) {
	// Under TLS (--http-tls) the server sees the *tls.Conn around ours.
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok {
		nc = tc.NetConn()
	}
	c, ok := nc.(*conn)
	if !ok {
		return // not one of ours (a server also serving another listener)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return
	}
	switch {
	case state == http.StateIdle && c.idleAt == nil:
		c.idleAt = l.idle.PushBack(c)
	case state != http.StateIdle && c.idleAt != nil:
		l.idle.Remove(c.idleAt)
		c.idleAt = nil
	}
}
