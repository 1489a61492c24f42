package membership

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/strata-streaming/strata/internal/secretfile"
)

var (
	// ErrClosed is returned by calls on a Membership after Close.
	ErrClosed = errors.New("membership: closed")
	// ErrLeft is returned by SetState and Broadcast after Leave.
	ErrLeft = errors.New("membership: left the cluster")
)

// Membership is this agent's place in the gossip cluster. Its methods are
// safe for concurrent use.
type Membership struct {
	cfg    Config
	logger *slog.Logger
	list   *memberlist.Memberlist
	del    *delegate
	queue  *eventQueue
	events chan Event
	bq     *memberlist.TransmitLimitedQueue
	ring   *memberlist.Keyring // nil without --gossip-key-file
	seq    atomic.Uint64       // last broadcast sequence number
	bound  string              // the address the transport is bound to
	id     int32               // self.ID, which never changes
	name   string              // self.Name, which never changes
	// gossipAddr is self.GossipAddr, which never changes.
	gossipAddr string

	selfMu sync.Mutex // serialises SetState; guards self
	self   Member
	// announceMu is held across memberlist's UpdateNode, which reads the
	// meta before it takes a new incarnation: two announcements at once
	// could give the older meta the newer incarnation.
	announceMu sync.Mutex

	// life is held shared by the calls that use list (Leave, SetState,
	// Broadcast, Join) and exclusively by Close, so Close never shuts
	// memberlist down under them (memberlist's Leave panics after Shutdown).
	// Lock order: life, then selfMu.
	life   sync.RWMutex
	closed bool
	left   atomic.Bool

	joinMu   sync.Mutex
	seeds    []string
	joinKick chan struct{} // capacity 1
	// joinFailures counts failed join attempts since the last success.
	joinFailures atomic.Int64

	done chan struct{} // closed by Close: stops the joiner and the dispatcher
	wg   sync.WaitGroup
}

// Start binds the gossip listener, announces self and returns; joining the
// cfg.Join seeds goes on in the background (see Join), so an agent starts
// even when every other agent is down. self.Name, GossipAddr and Started
// are filled in here. Start fails when cfg is invalid, when self's meta
// would be longer than MetaMaxBytes (ErrMetaTooLarge), or when the address
// cannot be bound.
func Start(cfg Config, self Member) (*Membership, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("membership: %w", err)
	}
	if err := self.validateSelf(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "membership")

	suffix, err := randomSuffix()
	if err != nil {
		return nil, err
	}
	self.Name = fmt.Sprintf("agent-%d-%s", self.ID, suffix)
	self.Started = time.UnixMilli(time.Now().UnixMilli())
	meta, err := encodeMeta(self)
	if err != nil {
		return nil, fmt.Errorf("membership: refusing to start: %w", err)
	}

	bind, _ := parseBindAddr(cfg.GossipAddr) // checked by Validate
	mlLogger := memberlistLogger(logger)
	nt, err := newTransport(bind, mlLogger)
	if err != nil {
		return nil, fmt.Errorf("membership: --gossip-addr %s: %w", cfg.GossipAddr, err)
	}
	advIP, advPort, note, err := advertiseAddr(cfg, bind, nt.GetAutoBindPort())
	if err != nil {
		_ = nt.Shutdown()
		return nil, err
	}
	if note != "" {
		logger.Info(note, "gossip_addr", cfg.GossipAddr, "advertised", advIP.String(),
			"to_choose", "set --gossip-advertise-addr")
	}
	self.GossipAddr = net.JoinHostPort(advIP.String(), strconv.Itoa(advPort))

	m := &Membership{
		cfg:        cfg,
		logger:     logger,
		events:     make(chan Event),
		self:       self,
		id:         self.ID,
		name:       self.Name,
		gossipAddr: self.GossipAddr,
		bound:      net.JoinHostPort(bind.IP.String(), strconv.Itoa(nt.GetAutoBindPort())),
		joinKick:   make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	m.queue = newEventQueue(cfg.EventQueueLimit, func(dropped int) {
		logger.Warn("event reader is behind; events dropped, an overflow event tells it to reconcile",
			"dropped", dropped, "limit", cfg.EventQueueLimit)
	})
	m.bq = &memberlist.TransmitLimitedQueue{RetransmitMult: cfg.RetransmitMult}
	m.del = newDelegate(self.Name, meta, logger, m.queue, m.bq, m.kickJoiner)
	// The queue's retransmit count grows with the cluster. The view's size
	// is read under the delegate's lock, never memberlist's: GetBroadcasts
	// may run where memberlist holds its node lock.
	m.bq.NumNodes = func() int {
		m.del.mu.Lock()
		defer m.del.mu.Unlock()
		return len(m.del.view.members)
	}

	mlc := memberlist.DefaultLANConfig()
	mlc.Name = self.Name
	mlc.Transport = nt
	mlc.BindAddr = bind.IP.String()
	mlc.BindPort = nt.GetAutoBindPort()
	mlc.AdvertiseAddr = advIP.String()
	mlc.AdvertisePort = advPort
	mlc.ProbeInterval = cfg.ProbeInterval
	mlc.ProbeTimeout = cfg.ProbeTimeout
	mlc.GossipInterval = cfg.GossipInterval
	mlc.SuspicionMult = cfg.SuspicionMult
	mlc.RetransmitMult = cfg.RetransmitMult
	mlc.PushPullInterval = cfg.PushPullInterval
	mlc.TCPTimeout = cfg.TCPTimeout
	mlc.GossipToTheDeadTime = cfg.GossipToTheDeadTime
	mlc.Label = cfg.Label
	var keys *secretfile.Watcher
	if cfg.KeyFile != "" {
		keys = m.keyWatcher()
		if err := keys.Load(); err != nil {
			_ = nt.Shutdown()
			return nil, fmt.Errorf("membership: --gossip-key-file %q: %w", cfg.KeyFile, err)
		}
		// Both verify settings are memberlist's defaults; set here so that
		// no change of defaults lets plain gossip in.
		mlc.Keyring, mlc.GossipVerifyIncoming, mlc.GossipVerifyOutgoing = m.ring, true, true
	}
	mlc.Delegate = m.del
	mlc.Events = m.del
	mlc.Alive = m.del
	mlc.Conflict = m.del
	mlc.Logger = mlLogger
	list, err := memberlist.Create(mlc)
	if err != nil {
		_ = nt.Shutdown()
		return nil, fmt.Errorf("membership: start gossip on %s: %w", m.bound, err)
	}
	m.list = list
	logger.Info("gossip started", "agent_id", self.ID, "node", self.Name, "bind_addr", m.bound,
		"gossip_addr", self.GossipAddr, "state", self.State.String())

	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		m.queue.dispatch(m.events, m.done)
	}()
	if keys != nil {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			keys.Run(m.done)
		}()
	}
	go func() {
		defer m.wg.Done()
		m.joinLoop()
	}()
	if len(cfg.Join) > 0 {
		if err := m.Join(cfg.Join); err != nil {
			_ = m.Close()
			return nil, err
		}
	}
	return m, nil
}

// newTransport binds UDP and TCP on one port. With port 0 the kernel picks
// the TCP port and UDP may find it taken, so that case is retried, as
// memberlist does for its own transport.
func newTransport(bind net.TCPAddr, logger *log.Logger) (*memberlist.NetTransport, error) {
	tries := 1
	if bind.Port == 0 {
		tries = 10
	}
	var err error
	for range tries {
		var nt *memberlist.NetTransport
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{bind.IP.String()},
			BindPort:  bind.Port,
			Logger:    logger,
		})
		if err == nil {
			return nt, nil
		}
		// memberlist formats the cause with %v, so errors.Is cannot see it.
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, err
}

func randomSuffix() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("membership: node name: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Events delivers what happens to the other members (see EventType). The
// channel is closed by Close. Reading it is optional but an agent that
// stops reading gets an EventOverflow when it resumes: memberlist is never
// held up by a slow reader.
func (m *Membership) Events() <-chan Event { return m.events }

// Members returns the live members (alive or suspected, not yet failed),
// this agent included until it leaves, ordered by agent id. Members that
// share an id (see EventDuplicate) are adjacent, the newest Started first.
func (m *Membership) Members() []Member {
	m.del.mu.Lock()
	defer m.del.mu.Unlock()
	return m.del.view.sorted()
}

// Self returns this agent as the others see it.
func (m *Membership) Self() Member {
	m.selfMu.Lock()
	defer m.selfMu.Unlock()
	return m.self
}

// SetState changes this agent's state and gossips it. It returns once the
// update has gone out to at least one other member (at once when there is
// none), or with an error when ctx's deadline or Config.UpdateTimeout
// passes first. The state is set either way: gossip delivers it later.
func (m *Membership) SetState(ctx context.Context, s State) error {
	if !s.valid() {
		return fmt.Errorf("membership: state %v: want joining, active or draining", s)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.life.RLock()
	defer m.life.RUnlock()
	if err := m.usableLocked(); err != nil {
		return err
	}
	m.selfMu.Lock()
	if m.self.State == s {
		m.selfMu.Unlock()
		return nil
	}
	next := m.self
	next.State = s
	meta, err := encodeMeta(next)
	if err != nil {
		m.selfMu.Unlock()
		return err
	}
	m.self = next
	m.del.setMeta(meta)
	m.selfMu.Unlock()

	timeout := m.waitTimeout(ctx)
	m.announceMu.Lock()
	defer m.announceMu.Unlock()
	if err := m.list.UpdateNode(timeout); err != nil {
		return fmt.Errorf("membership: state %v is set but was not gossiped within %v: %w", s, timeout, err)
	}
	return nil
}

// Broadcast gossips a small message to the other members, who receive it
// as an EventBroadcast: "the object named key is now at the version in
// payload". key names what the message is about: a broadcast still queued
// is replaced by a later one with the same key. Delivery is best effort, at
// most once per receiver, in no particular order, and never to this agent:
// gossip is a hint, the store is the truth. The key must be 1..255 bytes
// and key plus payload at most Config.BroadcastMaxBytes.
func (m *Membership) Broadcast(key string, payload []byte) error {
	switch {
	case key == "":
		return errors.New("membership: broadcast with an empty key")
	case len(key) > maxKeyBytes:
		return fmt.Errorf("%w: key of %d bytes, the limit is %d", ErrBroadcastTooLarge, len(key), maxKeyBytes)
	case len(key)+len(payload) > m.cfg.BroadcastMaxBytes:
		return fmt.Errorf("%w: key and payload of %d bytes, the limit is %d",
			ErrBroadcastTooLarge, len(key)+len(payload), m.cfg.BroadcastMaxBytes)
	}
	m.life.RLock()
	defer m.life.RUnlock()
	if err := m.usableLocked(); err != nil {
		return err
	}
	msg := encodeMessage(message{kind: kindBroadcast, senderID: m.id, seq: m.seq.Add(1), senderName: m.name, key: key, payload: payload})
	m.bq.QueueBroadcast(&queuedBroadcast{key: key, msg: msg})
	if n := m.bq.NumQueued(); n > m.cfg.BroadcastQueueLimit {
		m.bq.Prune(m.cfg.BroadcastQueueLimit)
		m.logger.Warn("broadcast queue full; dropped the most gossiped broadcasts",
			"dropped", n-m.cfg.BroadcastQueueLimit, "limit", m.cfg.BroadcastQueueLimit)
	}
	return nil
}

// Leave tells the other members that this agent is going, so they see an
// EventLeave at once instead of an EventFail after failure detection. It
// stops joining, sends a leave intent over TCP to each live member, then
// gossips memberlist's leave and waits until it has gone out to a member (at
// once when there is none); all of it within ctx's deadline or
// Config.UpdateTimeout. A member the intent did not reach reports
// EventFail. Gossip keeps running until Close; calling Leave twice is
// harmless.
func (m *Membership) Leave(ctx context.Context) error {
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return ErrClosed
	}
	if m.left.Swap(true) {
		return nil
	}
	m.kickJoiner() // it sees left and stops trying
	timeout := m.waitTimeout(ctx)
	deadline := time.Now().Add(timeout)
	m.sendLeaveIntents(timeout)
	if err := m.list.Leave(max(time.Until(deadline), time.Nanosecond)); err != nil {
		return fmt.Errorf("membership: leave not gossiped within %v: %w", timeout, err)
	}
	m.logger.Info("left the cluster", "agent_id", m.id, "node", m.name)
	return nil
}

// Close stops, in order: the joiner, the delivery of events (Events is
// closed; undelivered events are dropped) and gossip, without a leave
// message, so the others see this agent fail (call Leave first to leave
// gracefully). It waits for an in-flight Leave or SetState (bounded by
// their timeouts) and a join attempt in flight (bounded by TCPTimeout per
// seed). Calling Close twice is harmless.
func (m *Membership) Close() error {
	m.life.Lock()
	if m.closed {
		m.life.Unlock()
		return nil
	}
	m.closed = true
	m.life.Unlock()

	close(m.done)
	err := m.list.Shutdown()
	m.wg.Wait()
	m.logger.Info("gossip stopped", "agent_id", m.id, "node", m.name)
	return err
}

// sendLeaveIntents sends a leave intent to every other live member at once,
// over TCP so it arrives before memberlist's leave gossip, and waits for the
// sends for at most timeout. A send still running then finishes within
// TCPTimeout; Close waits for it.
func (m *Membership) sendLeaveIntents(timeout time.Duration) {
	msg := encodeMessage(message{kind: kindLeave, senderID: m.id, seq: m.seq.Add(1), senderName: m.name})
	var sends sync.WaitGroup
	// The nodes come from the view, not memberlist.Members(): memberlist
	// updates the nodes it returns under a lock the caller cannot take.
	for _, mem := range m.Members() {
		if mem.Name == m.name {
			continue
		}
		host, port, err := net.SplitHostPort(mem.GossipAddr)
		p, perr := strconv.ParseUint(port, 10, 16)
		if err != nil || perr != nil {
			continue // memberlist formed it from an IP and a port
		}
		n := &memberlist.Node{Name: mem.Name, Addr: net.ParseIP(host), Port: uint16(p)}
		sends.Add(1)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer sends.Done()
			if err := m.list.SendReliable(n, msg); err != nil {
				m.logger.Warn("leave intent not delivered; that member will see a failure", "node", n.Name, "err", err)
			}
		}()
	}
	all := make(chan struct{})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		sends.Wait()
		close(all)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-all:
	case <-timer.C:
	}
}

// waitTimeout is how long a blocking memberlist call may take: until ctx's
// deadline, and at most Config.UpdateTimeout.
func (m *Membership) waitTimeout(ctx context.Context) time.Duration {
	timeout := m.cfg.UpdateTimeout
	if dl, ok := ctx.Deadline(); ok {
		// memberlist takes 0 as "no timeout", so a passed deadline waits 1ns.
		timeout = max(min(timeout, time.Until(dl)), time.Nanosecond)
	}
	return timeout
}

// usableLocked says whether the member may still act: not closed, not
// left. m.life is held.
func (m *Membership) usableLocked() error {
	switch {
	case m.closed:
		return ErrClosed
	case m.left.Load():
		return ErrLeft
	}
	return nil
}
