package peer

// Pool keeps connections to the other agents' inter-agent listeners
// for the short requests agents send each other about transactions: a
// coordinator's WriteTxnMarkers to partition leaders, and a leader's
// AddPartitionsToTxn (verify or add) to a coordinator. Without it every
// transaction dialled at least once, and on a secured listener a dial is
// a TCP, TLS and SASL handshake.
//
// Connections are dialled with Dial (the replica fetcher's dialler,
// so the listener's TLS and SASL apply exactly as to replication), at
// most MaxConnsPerPeer to one agent, idle or busy: a request past the
// bound waits for one to come back. A connection goes back to the pool
// only after a request that got a whole answer (an error code counts as
// one); any other failure closes it, and the next request dials again.
// An idle connection older than IdleTimeout is closed instead of used,
// before the other agent's idle timeout would close it under a request.
// Forget closes the connections to an agent that left; Close closes all.
//
// Replication does not take from this pool: each fetch loop keeps its own
// connection to its leader (a long poll holds it), and a partition lining
// its log up with a new leader asks its epoch questions over one of its
// own.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrDial wraps a failure to connect to the other agent: the request
// was not sent.
var ErrDial = errors.New("kafka: could not connect to the agent")

// ErrPoolClosed is returned by Do after Close.
var ErrPoolClosed = errors.New("kafka: peer connection pool closed")

// PoolConfig are a pool's settings.
type PoolConfig struct {
	// Name tells the agent's pools apart in their metrics' pool label
	// ("transactions", "diskless").
	Name string
	// Self is the agent id the connections introduce (Dial).
	Self int32
	// Options are the inter-agent listener's TLS and SASL.
	Options Options
	// MaxConnsPerPeer bounds the connections open to one agent.
	MaxConnsPerPeer int
	// DialTimeout bounds one dial with its handshakes.
	DialTimeout time.Duration
	// IdleTimeout is how long an unused connection is kept: less than
	// the agents' connections-max-idle, which would close it first.
	IdleTimeout time.Duration
}

// DefaultPoolConfig returns the defaults: four connections per
// agent, a 5 s dial, idle connections kept five minutes (half of
// connections-max-idle's default).
func DefaultPoolConfig() PoolConfig {
	return PoolConfig{MaxConnsPerPeer: 4, DialTimeout: 5 * time.Second, IdleTimeout: 5 * time.Minute}
}

// Validate names the first bad field.
func (c PoolConfig) Validate() error {
	switch {
	case c.MaxConnsPerPeer < 1:
		return fmt.Errorf("kafka: MaxConnsPerPeer %d: want at least 1", c.MaxConnsPerPeer)
	case c.DialTimeout <= 0:
		return fmt.Errorf("kafka: DialTimeout %s: must be positive", c.DialTimeout)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("kafka: IdleTimeout %s: must be positive", c.IdleTimeout)
	}
	return nil
}

// Pool is safe for concurrent use.
type Pool struct {
	cfg     PoolConfig
	metrics *poolMetrics

	mu     sync.Mutex
	peers  map[int32]*peerConns
	closed bool
}

// peerConns are the connections to one agent.
type peerConns struct {
	// slots holds a token per connection in use; its capacity is
	// MaxConnsPerPeer. Idle connections hold none, and a dial happens
	// only when none is idle, so in use plus idle stays within the bound.
	slots chan struct{}
	idle  []idleConn // guarded by Pool.mu; most recently used last
}

type idleConn struct {
	c     *Client
	since time.Time
}

// NewPool returns an empty pool whose metrics are registered on reg.
func NewPool(cfg PoolConfig, reg prometheus.Registerer) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Pool{cfg: cfg, metrics: newPoolMetrics(reg, cfg.Name), peers: map[int32]*peerConns{}}, nil
}

// Do runs fn with a connection to agent id at addr, dialling one if none
// is idle, and keeps the connection for the next request if fn's error
// is nil or an answer from the other agent (see the file comment).
// fn must not keep the connection.
func (p *Pool) Do(ctx context.Context, id int32, addr string, fn func(*Client) error) error {
	pc, err := p.peer(id)
	if err != nil {
		return err
	}
	select {
	case pc.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-pc.slots }()
	c := p.takeIdle(pc, addr)
	if c == nil {
		dctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
		c, err = Dial(dctx, addr, p.cfg.Self, p.cfg.Options)
		cancel()
		p.metrics.dialled(err)
		if err != nil {
			return fmt.Errorf("%w %d: %w", ErrDial, id, err)
		}
		p.metrics.open(1)
	}
	err = fn(c)
	p.put(id, pc, c, reusable(err))
	return err
}

// reusable reports whether a connection is in step after a request that
// returned err: only a whole answer leaves it so.
func reusable(err error) bool {
	var ke *kerr.Error
	return err == nil || errors.As(err, &ke)
}

func (p *Pool) peer(id int32) (*peerConns, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	pc := p.peers[id]
	if pc == nil {
		pc = &peerConns{slots: make(chan struct{}, p.cfg.MaxConnsPerPeer)}
		p.peers[id] = pc
	}
	return pc, nil
}

// takeIdle returns the most recently used idle connection to addr, or
// nil; it closes the idle ones to another address (the agent restarted
// elsewhere) and those idle too long.
func (p *Pool) takeIdle(pc *peerConns, addr string) *Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for len(pc.idle) > 0 {
		ic := pc.idle[len(pc.idle)-1]
		pc.idle = pc.idle[:len(pc.idle)-1]
		if ic.c.Addr() == addr && now.Sub(ic.since) < p.cfg.IdleTimeout {
			return ic.c
		}
		p.closeConn(ic.c)
	}
	return nil
}

// put returns c to pc's idle connections, or closes it when it is not
// reusable, the pool is closed or the agent was forgotten meanwhile.
func (p *Pool) put(id int32, pc *peerConns, c *Client, reusable bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !reusable || p.closed || p.peers[id] != pc {
		p.closeConn(c)
		return
	}
	pc.idle = append(pc.idle, idleConn{c: c, since: time.Now()})
}

// closeConn closes c; p.mu is held.
func (p *Pool) closeConn(c *Client) {
	c.Close()
	p.metrics.open(-1)
}

// Forget closes the idle connections to agent id, which left the
// cluster; those in use close when their request ends.
func (p *Pool) Forget(id int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc := p.peers[id]; pc != nil {
		for _, ic := range pc.idle {
			p.closeConn(ic.c)
		}
		delete(p.peers, id)
	}
}

// Close closes every idle connection and fails later requests; a
// connection in use closes when its request ends. It may be called
// twice.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for id, pc := range p.peers {
		for _, ic := range pc.idle {
			p.closeConn(ic.c)
		}
		delete(p.peers, id)
	}
}

type poolMetrics struct {
	conns      prometheus.Gauge
	dials      prometheus.Counter
	dialErrors prometheus.Counter
}

func newPoolMetrics(reg prometheus.Registerer, name string) *poolMetrics {
	l := prometheus.Labels{"pool": name}
	m := &poolMetrics{
		conns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_inter_agent_pool_connections", ConstLabels: l,
			Help: "Pooled connections open to other agents' inter-agent listeners, by pool: transaction markers and verification, or diskless commits and index lookups."}),
		dials: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_inter_agent_pool_dials_total", ConstLabels: l,
			Help: "Connections the inter-agent pool dialled (with the listener's TLS and SASL handshakes), failed ones included."}),
		dialErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_inter_agent_pool_dial_errors_total", ConstLabels: l,
			Help: "Dials of the inter-agent pool that failed."}),
	}
	reg.MustRegister(m.conns, m.dials, m.dialErrors)
	return m
}

func (m *poolMetrics) dialled(err error) {
	m.dials.Inc()
	if err != nil {
		m.dialErrors.Inc()
	}
}

func (m *poolMetrics) open(n int) { m.conns.Add(float64(n)) }
