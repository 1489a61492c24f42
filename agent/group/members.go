package group

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncRequest is one SyncGroup; Assignments is set by the leader only.
type SyncRequest struct {
	Group, MemberID, InstanceID string
	Generation                  int32
	ProtocolType, Protocol      string // v5+; empty when not sent
	Assignments                 map[string][]byte
}

// SyncResult is the member's assignment.
type SyncResult struct {
	ProtocolType, Protocol string
	Assignment             []byte
}

// Sync handles a SyncGroup; followers wait for the leader's assignment.
func (c *Coordinator) Sync(ctx context.Context, r SyncRequest) (SyncResult, error) {
	c.mu.Lock()
	g, m, err := c.checkMemberLocked(r.Group, r.MemberID, r.InstanceID, r.Generation)
	if err != nil {
		c.mu.Unlock()
		return SyncResult{}, err
	}
	if (r.ProtocolType != "" && r.ProtocolType != g.protocolType) || (r.Protocol != "" && r.Protocol != g.protocol) {
		c.mu.Unlock()
		return SyncResult{}, fmt.Errorf("%w: sync names %s/%s, the group uses %s/%s", ErrInconsistentProtocol, r.ProtocolType, r.Protocol, g.protocolType, g.protocol)
	}
	res := SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol}
	switch g.state {
	case StatePreparingRebalance:
		c.mu.Unlock()
		return SyncResult{}, ErrRebalanceInProgress
	case StateStable:
		res.Assignment = m.assignment
		c.touchLocked(g, m)
		c.mu.Unlock()
		return res, nil
	}
	// CompletingRebalance: wait for the leader, or be it.
	if m.sync != nil {
		m.sync <- syncAnswer{err: fmt.Errorf("%w: superseded by a newer SyncGroup", ErrUnknownMember)}
	}
	ch := make(chan syncAnswer, 1)
	m.sync = ch
	c.touchLocked(g, m)
	if m.id == g.leader {
		for id, mm := range g.members {
			mm.assignment = r.Assignments[id]
		}
		g.state = StateStable
		if err := c.storeGroupLocked(ctx, g); err != nil {
			// As in Kafka: every member learns the generation was not
			// kept, and the group rebalances. NOT_COORDINATOR sends the
			// members to the partition's leader, which may have moved.
			err = fmt.Errorf("%w: %w", ErrClosed, err)
			for _, mm := range g.members {
				if mm.sync != nil {
					mm.sync <- syncAnswer{err: err}
					mm.sync = nil
				}
			}
			if !c.closed && c.groups[g.name] == g {
				g.state = StateCompletingRebalance
				c.prepareRebalanceLocked(g, "the group's metadata was not stored")
			}
			c.mu.Unlock()
			a := <-ch
			return SyncResult{}, a.err
		}
		for _, mm := range g.members {
			if mm.sync != nil {
				mm.sync <- syncAnswer{assignment: mm.assignment}
				mm.sync = nil
			}
		}
		c.logger.Info("group stable", "group", g.name, "generation", g.generation, "members", len(g.members))
	}
	c.mu.Unlock()
	select {
	case a := <-ch:
		res.Assignment = a.assignment
		return res, a.err
	case <-ctx.Done():
		return SyncResult{}, ctx.Err()
	}
}

// checkMemberLocked finds a member and checks its generation and instance.
func (c *Coordinator) checkMemberLocked(groupID, memberID, instanceID string, generation int32) (*groupState, *member, error) {
	if c.closed {
		return nil, nil, ErrClosed
	}
	g := c.groups[groupID]
	if g == nil || g.state == StateEmpty || g.state == StateDead {
		return nil, nil, fmt.Errorf("%w: group %q has no member %q", ErrUnknownMember, groupID, memberID)
	}
	if instanceID != "" {
		if cur, ok := g.static[instanceID]; ok && cur != memberID {
			return nil, nil, fmt.Errorf("%w: instance %q is now member %q", ErrFencedInstanceID, instanceID, cur)
		}
	}
	m, ok := g.members[memberID]
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q in group %q", ErrUnknownMember, memberID, groupID)
	}
	if generation != g.generation {
		return nil, nil, fmt.Errorf("%w: %d, the group is at %d", ErrIllegalGeneration, generation, g.generation)
	}
	return g, m, nil
}

// Heartbeat keeps a member alive and tells it when to rejoin.
func (c *Coordinator) Heartbeat(groupID, memberID, instanceID string, generation int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if g := c.groups[groupID]; g != nil && g.state == StatePreparingRebalance {
		// A member of the group that is rebalancing learns it here, even
		// with the previous generation, and keeps its session alive.
		if m, ok := g.members[memberID]; ok {
			c.touchLocked(g, m)
			return ErrRebalanceInProgress
		}
	}
	g, m, err := c.checkMemberLocked(groupID, memberID, instanceID, generation)
	if err != nil {
		return err
	}
	c.touchLocked(g, m)
	return nil
}

// Leaver names one member leaving: by member id, or (static members) by
// instance id.
type Leaver struct{ MemberID, InstanceID string }

// Leave removes members; the result has one error (or nil) per leaver.
func (c *Coordinator) Leave(groupID string, leavers []Leaver) ([]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	g := c.groups[groupID]
	if g == nil {
		return nil, fmt.Errorf("%w: group %q", ErrUnknownMember, groupID)
	}
	errs := make([]error, len(leavers))
	for i, l := range leavers {
		id := l.MemberID
		if l.InstanceID != "" {
			cur, ok := g.static[l.InstanceID]
			switch {
			case !ok:
				errs[i] = fmt.Errorf("%w: instance %q", ErrUnknownMember, l.InstanceID)
				continue
			case id != "" && id != cur:
				errs[i] = fmt.Errorf("%w: instance %q is member %q", ErrFencedInstanceID, l.InstanceID, cur)
				continue
			}
			id = cur
		}
		if timer, ok := g.pending[id]; ok {
			timer.Stop()
			delete(g.pending, id)
			c.tryCompleteJoinLocked(g)
			continue
		}
		if _, ok := g.members[id]; !ok {
			errs[i] = fmt.Errorf("%w: %q", ErrUnknownMember, id)
			continue
		}
		c.memberLeftLocked(g, id, "member left")
	}
	c.forgetIfUnusedLocked(g)
	return errs, nil
}

// GroupMember describes one member (DescribeGroups).
type GroupMember struct {
	MemberID, InstanceID, ClientID, ClientHost string
	Metadata, Assignment                       []byte
}

// Description is a group as DescribeGroups reports it, plus its
// generation (which the protocol does not carry). A KIP-848 group is shown
// in the classic consumer-protocol form: its assignor as the protocol, its
// member epoch as the generation.
type Description struct {
	State                  string
	Generation             int32
	ProtocolType, Protocol string
	Members                []GroupMember
}

// Describe returns the group's state; ok is false for an unknown group.
func (c *Coordinator) Describe(groupID string) (Description, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Description{}, false, ErrClosed
	}
	g := c.groups[groupID]
	if g == nil {
		return Description{State: StateDead.String()}, false, nil
	}
	if g.cg != nil && !g.usesClassic() {
		return c.describeConsumerLocked(g), true, nil
	}
	d := Description{State: g.state.String(), Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		gm := GroupMember{MemberID: id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if g.state == StateStable || g.state == StateCompletingRebalance {
			gm.Metadata = m.metadataFor(g.protocol)
		}
		if g.state == StateStable {
			gm.Assignment = m.assignment
		}
		d.Members = append(d.Members, gm)
	}
	return d, true, nil
}

// Listed is one group of ListGroups.
type Listed struct {
	Group, ProtocolType string
	Type                string // classic or consumer (KIP-848)
	State               string
}

// List returns every group this coordinator knows, sorted by name.
func (c *Coordinator) List() []Listed {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Listed, 0, len(c.groups))
	for _, name := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[name]
		l := Listed{Group: name, ProtocolType: g.protocolType, Type: "classic", State: g.state.String()}
		if g.cg != nil && !g.usesClassic() {
			l.ProtocolType, l.Type, l.State = "consumer", "consumer", g.cg.state()
		}
		out = append(out, l)
	}
	return out
}

// subscribedTopics is the union of the consumer-protocol subscriptions of
// the group's members (for OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC); a
// KIP-848 member's regex subscribes it to every topic the regex matches.
func (g *groupState) subscribedTopics() func(topic string) bool {
	out := map[string]bool{}
	var regexes []*regexp.Regexp
	lookup := func(topic string) bool {
		return out[topic] || slices.ContainsFunc(regexes, func(re *regexp.Regexp) bool { return re.MatchString(topic) })
	}
	if g.usesConsumer() {
		for _, m := range g.cg.members {
			for _, t := range m.topics {
				out[t] = true
			}
			if m.re != nil {
				regexes = append(regexes, m.re)
			}
		}
		return lookup
	}
	if g.protocolType != "consumer" {
		return lookup
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if meta.ReadFrom(m.metadataFor(g.protocol)) == nil {
			for _, t := range meta.Topics {
				out[t] = true
			}
		}
	}
	return lookup
}

// allSupport reports whether every member supports protocol.
func (g *groupState) allSupport(protocol string) bool {
	for _, m := range g.members {
		if !m.supports(protocol) {
			return false
		}
	}
	return true
}

// chooseProtocol picks, among the protocols every member supports, the one
// most members list first among those (Kafka's vote).
func (g *groupState) chooseProtocol() string {
	votes := map[string]int{}
	var first string
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		for _, p := range g.members[id].protocols {
			if g.allSupport(p.Name) {
				votes[p.Name]++
				if first == "" {
					first = p.Name
				}
				break
			}
		}
	}
	best := first
	for _, name := range slices.Sorted(maps.Keys(votes)) {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

func (g *groupState) anyMember() string {
	ids := slices.Sorted(maps.Keys(g.members))
	return ids[0]
}

func (g *groupState) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return max(d, time.Second)
}

func (g *groupState) stopRebalanceTimers() {
	if g.rebalance != nil {
		g.rebalance.Stop()
		g.rebalance = nil
	}
	if g.initialDelay != nil {
		g.initialDelay.Stop()
		g.initialDelay = nil
	}
}

// joinResult is the JoinGroup answer of the current generation for id.
func (g *groupState) joinResult(id string) JoinResult {
	r := JoinResult{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocol, LeaderID: g.leader, MemberID: id}
	if id == g.leader {
		for _, mid := range slices.Sorted(maps.Keys(g.members)) {
			m := g.members[mid]
			r.Members = append(r.Members, JoinMember{MemberID: mid, InstanceID: m.instanceID, Metadata: m.metadataFor(g.protocol)})
		}
	}
	return r
}
