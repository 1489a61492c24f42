package group

// The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// with Kafka's states and rules (KIP-394 member ids, KIP-345 static
// members). Requests that must wait (a JoinGroup until every member has
// rejoined, a SyncGroup until the leader has assigned) park a channel on
// their member and wait outside the coordinator's mutex; whatever completes
// the phase answers every parked channel. Timers (session expiry,
// rebalance deadline, the initial-join delay) run their callbacks under the
// mutex and check that they are still current.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"
)

// State is a classic group's state, named as Kafka names them.
type State int

const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

func (s State) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// Protocol is one assignor a member supports, with its member metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is one JoinGroup.
type JoinRequest struct {
	Group, MemberID, InstanceID, ClientID, ClientHost string
	ProtocolType                                      string
	Protocols                                         []Protocol
	SessionTimeout, RebalanceTimeout                  time.Duration
	// RequireKnownMemberID is KIP-394 (JoinGroup v4+): a new member first
	// gets an id with ErrMemberIDRequired and joins again with it.
	RequireKnownMemberID bool
}

// JoinMember is one member as the leader's JoinGroup answer lists it.
type JoinMember struct {
	MemberID, InstanceID string
	Metadata             []byte
}

// JoinResult is the answer to a JoinGroup. MemberID is set also with
// ErrMemberIDRequired.
type JoinResult struct {
	Generation             int32
	ProtocolType, Protocol string
	LeaderID, MemberID     string
	Members                []JoinMember // only for the leader
	SkipAssignment         bool
}

type joinAnswer struct {
	res JoinResult
	err error
}

type syncAnswer struct {
	assignment []byte
	err        error
}

// member is one member of a classic group.
type member struct {
	id, instanceID, clientID, clientHost string
	protocols                            []Protocol
	sessionTimeout, rebalanceTimeout     time.Duration
	assignment                           []byte
	join                                 chan joinAnswer // parked JoinGroup, if any
	sync                                 chan syncAnswer // parked SyncGroup, if any
	expiry                               *time.Timer
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *member) supports(protocol string) bool {
	return slices.ContainsFunc(m.protocols, func(p Protocol) bool { return p.Name == protocol })
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool { return x.Name == y.Name && string(x.Metadata) == string(y.Metadata) })
}

func newMemberID(clientID string) string {
	var b [16]byte
	rand.Read(b[:])
	return clientID + "-" + hex.EncodeToString(b[:])
}

// Join handles a JoinGroup; it may wait for the rest of the group.
func (c *Coordinator) Join(ctx context.Context, r JoinRequest) (JoinResult, error) {
	if r.Group == "" {
		return JoinResult{}, ErrInvalidGroupID
	}
	if r.SessionTimeout < c.cfg.MinSessionTimeout || r.SessionTimeout > c.cfg.MaxSessionTimeout {
		return JoinResult{}, fmt.Errorf("%w: %v not in [%v, %v]", ErrInvalidSessionTimeout, r.SessionTimeout, c.cfg.MinSessionTimeout, c.cfg.MaxSessionTimeout)
	}
	if r.ProtocolType == "" || len(r.Protocols) == 0 {
		return JoinResult{}, fmt.Errorf("%w: empty protocol type or protocol list", ErrInconsistentProtocol)
	}
	c.mu.Lock()
	ch, res, err := c.joinLocked(r)
	if g := c.groups[r.Group]; err != nil && g != nil {
		c.forgetIfUnusedLocked(g) // a refused first join leaves nothing behind
	}
	c.mu.Unlock()
	if ch == nil {
		return res, err
	}
	select {
	case a := <-ch:
		return a.res, a.err
	case <-ctx.Done():
		return JoinResult{}, ctx.Err()
	}
}

// joinLocked applies a JoinGroup and returns either an answer or a channel
// to wait on.
func (c *Coordinator) joinLocked(r JoinRequest) (chan joinAnswer, JoinResult, error) {
	if c.closed {
		return nil, JoinResult{}, ErrClosed
	}
	g := c.group(r.Group)
	if g.usesConsumer() {
		return nil, JoinResult{}, fmt.Errorf("%w: group %q uses the consumer protocol (KIP-848)", ErrInconsistentProtocol, r.Group)
	}
	if g.cg != nil && len(g.consumerStored) > 0 {
		// An empty KIP-848 group becomes a classic one: its records go.
		ctx, cancel := context.WithTimeout(context.Background(), storeGroupTimeout)
		err := c.writeLocked(ctx, nil, consumerTombstones(g)...)
		cancel()
		if err != nil {
			return nil, JoinResult{}, fmt.Errorf("%w: %w", ErrClosed, err)
		}
		g.consumerStored = nil
	}
	g.cg = nil // an empty KIP-848 group becomes a classic one
	if len(g.members) > 0 || g.state != StateEmpty {
		if g.protocolType != "" && r.ProtocolType != g.protocolType {
			return nil, JoinResult{}, fmt.Errorf("%w: protocol type %q, the group uses %q", ErrInconsistentProtocol, r.ProtocolType, g.protocolType)
		}
		if len(g.members) > 0 && !slices.ContainsFunc(r.Protocols, func(p Protocol) bool { return g.allSupport(p.Name) }) {
			return nil, JoinResult{}, fmt.Errorf("%w: none of the member's assignors is supported by every member", ErrInconsistentProtocol)
		}
	}
	if r.MemberID == "" {
		return c.joinNewLocked(g, r)
	}
	if timer, ok := g.pending[r.MemberID]; ok {
		timer.Stop()
		delete(g.pending, r.MemberID)
		m := c.addMemberLocked(g, r.MemberID, r)
		return c.parkJoinLocked(g, m, "member joined")
	}
	m, ok := g.members[r.MemberID]
	if !ok {
		return nil, JoinResult{}, fmt.Errorf("%w: %q in group %q", ErrUnknownMember, r.MemberID, r.Group)
	}
	if m.instanceID != r.InstanceID {
		return nil, JoinResult{}, fmt.Errorf("%w: member %q has instance id %q, not %q", ErrFencedInstanceID, m.id, m.instanceID, r.InstanceID)
	}
	changed := !sameProtocols(m.protocols, r.Protocols)
	m.protocols, m.sessionTimeout, m.rebalanceTimeout = r.Protocols, r.SessionTimeout, r.RebalanceTimeout
	c.touchLocked(g, m)
	switch g.state {
	case StatePreparingRebalance:
		return c.parkJoinLocked(g, m, "")
	case StateCompletingRebalance, StateStable:
		// Kafka: the leader rejoining, or any member with new metadata,
		// forces a rebalance; a follower with the same metadata just gets
		// the current generation again.
		if changed || (g.state == StateStable && m.id == g.leader) {
			return c.parkJoinLocked(g, m, "member "+m.id+" rejoined with new metadata")
		}
		return nil, g.joinResult(m.id), nil
	}
	return c.parkJoinLocked(g, m, "member rejoined")
}

// joinNewLocked handles a JoinGroup without a member id.
func (c *Coordinator) joinNewLocked(g *groupState, r JoinRequest) (chan joinAnswer, JoinResult, error) {
	id := newMemberID(r.ClientID)
	if r.InstanceID != "" {
		if oldID, ok := g.static[r.InstanceID]; ok {
			// A static member restarted: it takes over its old identity
			// and assignment. If the group is stable and the metadata is
			// unchanged, nothing else needs to move (KIP-345).
			m := g.members[oldID]
			if m.join != nil {
				m.join <- joinAnswer{err: fmt.Errorf("%w: instance %q rejoined as a new member", ErrFencedInstanceID, r.InstanceID)}
				m.join = nil
			}
			if m.sync != nil {
				m.sync <- syncAnswer{err: fmt.Errorf("%w: instance %q rejoined as a new member", ErrFencedInstanceID, r.InstanceID)}
				m.sync = nil
			}
			delete(g.members, oldID)
			m.id, m.clientID, m.clientHost = id, r.ClientID, r.ClientHost
			g.members[id] = m
			g.static[r.InstanceID] = id
			if g.leader == oldID {
				g.leader = id
			}
			changed := !sameProtocols(m.protocols, r.Protocols)
			m.protocols, m.sessionTimeout, m.rebalanceTimeout = r.Protocols, r.SessionTimeout, r.RebalanceTimeout
			c.touchLocked(g, m)
			if g.state == StateStable && !changed {
				// The new member id is stored, so that the next
				// coordinator knows it (Kafka reverts the replacement
				// when this fails; here the member then meets a
				// coordinator that knows only the old id, and rejoins).
				c.storeGroupInBackgroundLocked(g)
				res := g.joinResult(id)
				return nil, res, nil
			}
			return c.parkJoinLocked(g, m, "static member "+r.InstanceID+" rejoined")
		}
		m := c.addMemberLocked(g, id, r)
		g.static[r.InstanceID] = id
		return c.parkJoinLocked(g, m, "static member "+r.InstanceID+" joined")
	}
	if r.RequireKnownMemberID {
		// The id is held for one session timeout; a client that never
		// comes back with it does not hold up the rebalance for longer.
		g.pending[id] = time.AfterFunc(r.SessionTimeout, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if _, ok := g.pending[id]; ok {
				delete(g.pending, id)
				c.tryCompleteJoinLocked(g)
				c.forgetIfUnusedLocked(g)
			}
		})
		return nil, JoinResult{MemberID: id, Generation: -1}, ErrMemberIDRequired
	}
	m := c.addMemberLocked(g, id, r)
	return c.parkJoinLocked(g, m, "member joined")
}

func (c *Coordinator) addMemberLocked(g *groupState, id string, r JoinRequest) *member {
	m := &member{id: id, instanceID: r.InstanceID, clientID: r.ClientID, clientHost: r.ClientHost,
		protocols: r.Protocols, sessionTimeout: r.SessionTimeout, rebalanceTimeout: r.RebalanceTimeout}
	if len(g.members) == 0 && g.state == StateEmpty {
		g.protocolType = r.ProtocolType // an Empty group takes any protocol type
	}
	g.members[id] = m
	c.touchLocked(g, m)
	return m
}

// parkJoinLocked makes m wait for the end of the join phase, starting a
// rebalance (with reason) if none is in progress.
func (c *Coordinator) parkJoinLocked(g *groupState, m *member, reason string) (chan joinAnswer, JoinResult, error) {
	if m.join != nil {
		// A duplicate JoinGroup from the same member: the older one loses.
		m.join <- joinAnswer{err: fmt.Errorf("%w: superseded by a newer JoinGroup", ErrUnknownMember)}
	}
	m.join = make(chan joinAnswer, 1)
	if g.state != StatePreparingRebalance {
		c.prepareRebalanceLocked(g, reason)
	} else if g.initialDelay != nil {
		// New members during the initial delay push it back, up to the
		// rebalance timeout (Kafka's group.initial.rebalance.delay.ms).
		c.extendInitialDelayLocked(g)
	}
	ch := m.join
	c.tryCompleteJoinLocked(g)
	return ch, JoinResult{}, nil
}

// prepareRebalanceLocked moves g to PreparingRebalance.
func (c *Coordinator) prepareRebalanceLocked(g *groupState, reason string) {
	if g.state == StateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			if m.sync != nil {
				m.sync <- syncAnswer{err: ErrRebalanceInProgress}
				m.sync = nil
			}
		}
	}
	wasEmpty := g.state == StateEmpty
	g.state = StatePreparingRebalance
	c.logger.Info("group rebalancing", "group", g.name, "reason", reason, "generation", g.generation, "members", len(g.members))
	g.stopRebalanceTimers()
	deadline := g.maxRebalanceTimeout()
	g.rebalance = time.AfterFunc(deadline, c.timerFunc(g, func() { c.completeJoinLocked(g) }))
	if wasEmpty && c.cfg.InitialRebalanceDelay > 0 {
		g.initialDelayEnd = time.Now().Add(deadline)
		g.initialDelay = time.AfterFunc(c.cfg.InitialRebalanceDelay, c.timerFunc(g, func() {
			g.initialDelay = nil
			c.tryCompleteJoinLocked(g)
		}))
	}
}

func (c *Coordinator) extendInitialDelayLocked(g *groupState) {
	next := c.cfg.InitialRebalanceDelay
	if left := time.Until(g.initialDelayEnd); left < next {
		next = max(left, 0)
	}
	g.initialDelay.Reset(next)
}

// timerFunc wraps a timer callback: it runs under the mutex and only if the
// coordinator is open and the group is still the registered one.
func (c *Coordinator) timerFunc(g *groupState, fn func()) func() {
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || c.groups[g.name] != g {
			return
		}
		fn()
	}
}

// tryCompleteJoinLocked ends the join phase once every member (and every
// member id handed out) has joined and no initial delay is running.
func (c *Coordinator) tryCompleteJoinLocked(g *groupState) {
	if g.state != StatePreparingRebalance || g.initialDelay != nil || len(g.pending) > 0 {
		return
	}
	for _, m := range g.members {
		if m.join == nil {
			return
		}
	}
	c.completeJoinLocked(g)
}

// completeJoinLocked starts the next generation: members that did not
// rejoin are dropped, the protocol is chosen and every parked JoinGroup is
// answered.
func (c *Coordinator) completeJoinLocked(g *groupState) {
	if g.state != StatePreparingRebalance {
		return
	}
	g.stopRebalanceTimers()
	for id, m := range g.members {
		if m.join == nil {
			c.removeMemberLocked(g, id, "did not rejoin in time")
		}
	}
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	g.generation++
	g.kept = true
	if len(g.members) == 0 {
		c.becomeEmptyLocked(g)
		return
	}
	g.protocol = g.chooseProtocol()
	if _, ok := g.members[g.leader]; !ok {
		g.leader = g.anyMember()
	}
	g.state = StateCompletingRebalance
	for id, m := range g.members {
		m.join <- joinAnswer{res: g.joinResult(id)}
		m.join = nil
		c.touchLocked(g, m)
	}
	c.logger.Info("group join complete", "group", g.name, "generation", g.generation, "protocol", g.protocol, "leader", g.leader, "members", len(g.members))
}

// removeMemberLocked drops a member and answers anything it had parked.
func (c *Coordinator) removeMemberLocked(g *groupState, id, reason string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	if m.expiry != nil {
		m.expiry.Stop()
	}
	if m.join != nil {
		m.join <- joinAnswer{err: fmt.Errorf("%w: removed (%s)", ErrUnknownMember, reason)}
	}
	if m.sync != nil {
		m.sync <- syncAnswer{err: fmt.Errorf("%w: removed (%s)", ErrUnknownMember, reason)}
	}
	delete(g.members, id)
	if m.instanceID != "" && g.static[m.instanceID] == id {
		delete(g.static, m.instanceID)
	}
	c.logger.Info("group member removed", "group", g.name, "member", id, "reason", reason)
}

// memberLeftLocked reacts to a member that left or expired.
func (c *Coordinator) memberLeftLocked(g *groupState, id, reason string) {
	c.removeMemberLocked(g, id, reason)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		if len(g.members) == 0 {
			g.stopRebalanceTimers()
			g.generation++
			c.becomeEmptyLocked(g)
			return
		}
		c.prepareRebalanceLocked(g, reason)
	case StatePreparingRebalance:
		c.tryCompleteJoinLocked(g)
	}
}

// becomeEmptyLocked moves g, without members now, to Empty. As in Kafka
// the group stays, with its generation and protocol type, until it is
// deleted or ExpireOffsets removes it.
func (c *Coordinator) becomeEmptyLocked(g *groupState) {
	g.state, g.protocol, g.leader = StateEmpty, "", ""
	g.emptySince = c.now()
	c.logger.Info("group empty", "group", g.name, "generation", g.generation)
	c.storeGroupInBackgroundLocked(g)
}

// storeGroupTimeout bounds the append of a group's metadata that no
// request waits for.
const storeGroupTimeout = 30 * time.Second

// storeGroupLocked makes g's classic metadata (generation, protocol,
// leader, members and their assignments) durable in the partition, as
// Kafka's coordinator does after each rebalance and when a group
// empties, so that the partition's next coordinator serves the group on
// without a rebalance. c.mu is held during the append, as for commits.
func (c *Coordinator) storeGroupLocked(ctx context.Context, g *groupState) error {
	if err := c.writeLocked(ctx, nil, groupRecord(g, false, c.now())); err != nil {
		return fmt.Errorf("group: store the metadata of %q: %w", g.name, err)
	}
	return nil
}

// storeGroupInBackgroundLocked stores g for a change no request waits for
// (a member's session timed out, the group emptied). A failure is logged:
// memory stays the truth here, and the next coordinator, replaying the
// previous record, times the departed members out again.
func (c *Coordinator) storeGroupInBackgroundLocked(g *groupState) {
	ctx, cancel := context.WithTimeout(context.Background(), storeGroupTimeout)
	defer cancel()
	if err := c.storeGroupLocked(ctx, g); err != nil && !errors.Is(err, ErrClosed) {
		c.logger.Warn("group metadata not stored", "group", g.name, "generation", g.generation, "err", err)
	}
}

// touchLocked restarts m's session timer.
func (c *Coordinator) touchLocked(g *groupState, m *member) {
	id := m.id
	c.armLocked(&m.expiry, m.sessionTimeout, g, func() {
		if cur, ok := g.members[id]; ok && cur == m {
			c.memberLeftLocked(g, id, "session timeout")
		}
	})
}

// armLocked (re)starts the timer in *slot. Its callback runs under the
// mutex, and only if the timer is still the one in *slot: a callback that
// fired while the mutex was held, and waited for it while a heartbeat
// armed a newer timer, does nothing.
func (c *Coordinator) armLocked(slot **time.Timer, d time.Duration, g *groupState, fn func()) {
	if *slot != nil {
		(*slot).Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, c.timerFunc(g, func() {
		if *slot != t {
			return
		}
		*slot = nil
		fn()
	}))
	*slot = t
}

// replayGroup applies a replayed GroupMetadata record: the classic group
// as its last coordinator stored it, Stable with its members and their
// assignments, or Empty; a tombstone forgets it (its offsets, if any,
// stay).
func (c *Coordinator) replayGroup(d decoded) {
	g := c.group(d.group)
	g.cg, g.members, g.static, g.leader, g.protocol = nil, map[string]*member{}, map[string]string{}, "", ""
	if d.value == nil {
		g.state, g.generation, g.protocolType, g.kept, g.emptySince = StateEmpty, 0, "", false, time.Time{}
		if len(g.offsets) == 0 {
			delete(c.groups, g.name)
		}
		return
	}
	v := d.value
	g.protocolType, g.generation, g.kept = v.ProtocolType, v.Generation, true
	if len(v.Members) == 0 {
		g.state, g.emptySince = StateEmpty, time.UnixMilli(v.CurrentStateTimestamp)
		return
	}
	g.state, g.emptySince = StateStable, time.Time{}
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	for _, vm := range v.Members {
		m := &member{id: vm.MemberID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			protocols:      []Protocol{{Name: g.protocol, Metadata: vm.Subscription}},
			sessionTimeout: time.Duration(vm.SessionTimeoutMillis) * time.Millisecond, assignment: vm.Assignment}
		m.rebalanceTimeout = m.sessionTimeout
		if vm.RebalanceTimeoutMillis > 0 {
			m.rebalanceTimeout = time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond
		}
		if vm.InstanceID != nil && *vm.InstanceID != "" {
			m.instanceID = *vm.InstanceID
			g.static[m.instanceID] = m.id
		}
		g.members[m.id] = m
	}
}
