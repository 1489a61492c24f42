package group

// KIP-848 consumer groups: members send ConsumerGroupHeartbeat, the
// coordinator computes a target assignment with a server-side assignor and
// moves each member towards it (reconcile.go). A group's epoch grows when
// its members or their subscriptions (or the subscribed topics' partition
// counts) change; the target is recomputed at once, so the group's
// assignment epoch always equals its epoch. A member's epoch reaches the
// assignment epoch once it has given up what the target takes from it.

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// TopicInfo is what server-side assignment needs to know of a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
	Internal   bool
}

// Topics is the coordinator's view of the cluster's topics.
type Topics interface {
	Topic(name string) (TopicInfo, bool)
	TopicByID(id [16]byte) (TopicInfo, bool)
	AllTopics() []TopicInfo
}

// Assignors names the server-side assignors, the default first.
var Assignors = []string{"uniform", "range"}

// Member epochs with a meaning of their own in a heartbeat.
const (
	epochJoin       = 0
	epochLeave      = -1
	epochStaticLeft = -2
)

// ConsumerHeartbeat is one ConsumerGroupHeartbeat. Nil fields were not
// sent: they keep their previous value.
type ConsumerHeartbeat struct {
	Group, MemberID        string
	MemberEpoch            int32
	InstanceID, RackID     *string
	RebalanceTimeout       time.Duration // negative: unchanged
	SubscribedTopics       []string
	SubscribedRegex        *string
	ServerAssignor         *string
	Owned                  Assignment // nil: unchanged since the last heartbeat
	ClientID, ClientHost   string
	RequireClientMemberIDs bool // v1+: the member makes its own id
}

// ConsumerHeartbeatResult is the answer; Assignment is nil when the member
// already has it.
type ConsumerHeartbeatResult struct {
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	Assignment        Assignment
}

// consumerGroup is a group's KIP-848 state.
type consumerGroup struct {
	epoch           int32
	assignmentEpoch int32
	assignor        string
	members         map[string]*cmember
	static          map[string]string    // instance id -> member id
	target          map[string]partSet   // member id -> target assignment
	holders         map[topicPart]string // partition -> member holding it (assigned or revoking)
	subscribed      string               // the subscribed topics' metadata the target was computed from
	holdTimer       *time.Timer          // ends the hold after a coordinator restart
	restored        bool                 // rebuilt from its records on load: no hold
}

// cmember is one member of a KIP-848 group.
type cmember struct {
	id, instanceID, rackID, clientID, clientHost string
	epoch, previousEpoch                         int32
	state                                        memberState
	rebalanceTimeout                             time.Duration
	topics                                       []string // subscribed names, sorted
	regex                                        string
	re                                           *regexp.Regexp
	assignor                                     string
	assigned, revoking                           partSet
	assignedAt                                   map[topicPart]int32 // member epoch each assigned partition came with
	regexTopics                                  []string            // topics the regex matched when last resolved
	regexResolved                                time.Time
	expiry, revokeBy                             *time.Timer
	left                                         bool // a static member that left for now (epoch -2)
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{members: map[string]*cmember{}, static: map[string]string{},
		target: map[string]partSet{}, holders: map[topicPart]string{}}
}

// usesClassic reports whether g is a classic group with members: KIP-848
// members may not join it.
func (g *groupState) usesClassic() bool {
	return len(g.members) > 0 || len(g.pending) > 0 || g.state != StateEmpty
}

// usesConsumer reports whether g is a KIP-848 group with members.
func (g *groupState) usesConsumer() bool { return g.cg != nil && len(g.cg.members) > 0 }

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat.
func (c *Coordinator) ConsumerHeartbeat(r ConsumerHeartbeat) (ConsumerHeartbeatResult, error) {
	re, err := checkHeartbeat(r)
	if err != nil {
		return ConsumerHeartbeatResult{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ConsumerHeartbeatResult{}, ErrClosed
	}
	if g := c.groups[r.Group]; g != nil && g.usesClassic() {
		return ConsumerHeartbeatResult{}, fmt.Errorf("%w: group %q uses the classic protocol", ErrGroupNotFound, r.Group)
	}
	if r.MemberEpoch < 0 {
		return c.consumerLeaveLocked(r)
	}
	g := c.group(r.Group)
	if g.cg == nil {
		g.cg = newConsumerGroup()
	}
	m, subscriptionChanged, err := c.heartbeatMemberLocked(g, r)
	if err != nil {
		c.forgetIfUnusedLocked(g)
		return ConsumerHeartbeatResult{}, err
	}
	before := m.assigned.clone()
	if r.RackID != nil {
		m.rackID = *r.RackID
	}
	if r.RebalanceTimeout >= 0 {
		m.rebalanceTimeout = r.RebalanceTimeout
	}
	m.clientID, m.clientHost = r.ClientID, r.ClientHost
	if r.SubscribedTopics != nil {
		topics := slices.Sorted(slices.Values(r.SubscribedTopics))
		topics = slices.Compact(topics)
		subscriptionChanged = subscriptionChanged || !slices.Equal(topics, m.topics)
		m.topics = topics
	}
	if r.SubscribedRegex != nil && *r.SubscribedRegex != m.regex {
		m.regex, m.re, subscriptionChanged = *r.SubscribedRegex, re, true
		m.regexResolved = time.Time{}
	}
	if r.ServerAssignor != nil && *r.ServerAssignor != m.assignor {
		m.assignor, subscriptionChanged = *r.ServerAssignor, true
	}
	c.maybeReassignLocked(g, subscriptionChanged, "member "+m.id+" joined or changed its subscription")
	c.reconcileLocked(g, m, r.Owned)
	c.touchConsumerLocked(g, m)
	if err := c.storeConsumerLocked(g, m); err != nil {
		// Not durable: the member learns nothing of it and retries on
		// the partition's leader, as Kafka's members do after a failed
		// write (the next store writes what this one missed).
		return ConsumerHeartbeatResult{}, fmt.Errorf("%w: %w", ErrClosed, err)
	}

	res := ConsumerHeartbeatResult{MemberID: m.id, MemberEpoch: m.epoch, HeartbeatInterval: c.cfg.ConsumerHeartbeatInterval}
	full := r.MemberEpoch == epochJoin || (r.RebalanceTimeout >= 0 && (r.SubscribedTopics != nil || r.SubscribedRegex != nil) && r.Owned != nil)
	if full || !m.assigned.equal(before) {
		res.Assignment = m.assigned.assignment()
	}
	return res, nil
}

// checkHeartbeat applies Kafka's request rules and compiles the regex.
func checkHeartbeat(r ConsumerHeartbeat) (*regexp.Regexp, error) {
	switch {
	case r.Group == "":
		return nil, ErrInvalidGroupID
	case r.MemberID == "" && (r.RequireClientMemberIDs || r.MemberEpoch > 0 || r.MemberEpoch == epochLeave):
		return nil, fmt.Errorf("%w: MemberId can't be empty", ErrInvalidRequest)
	case r.InstanceID != nil && *r.InstanceID == "":
		return nil, fmt.Errorf("%w: InstanceId can't be empty", ErrInvalidRequest)
	case r.RackID != nil && *r.RackID == "":
		return nil, fmt.Errorf("%w: RackId can't be empty", ErrInvalidRequest)
	case r.MemberEpoch < epochStaticLeft:
		return nil, fmt.Errorf("%w: MemberEpoch %d is invalid", ErrInvalidRequest, r.MemberEpoch)
	case r.MemberEpoch == epochStaticLeft && r.InstanceID == nil:
		return nil, fmt.Errorf("%w: InstanceId can't be null when leaving with epoch -2", ErrInvalidRequest)
	case r.ServerAssignor != nil && !slices.Contains(Assignors, *r.ServerAssignor):
		return nil, fmt.Errorf("%w: %q; supported: %s", ErrUnsupportedAssignor, *r.ServerAssignor, strings.Join(Assignors, ", "))
	}
	if r.MemberEpoch == epochJoin {
		switch {
		case r.RebalanceTimeout < 0:
			return nil, fmt.Errorf("%w: RebalanceTimeoutMs must be provided in first request", ErrInvalidRequest)
		case r.Owned == nil || len(r.Owned) > 0:
			return nil, fmt.Errorf("%w: TopicPartitions must be empty when (re-)joining", ErrInvalidRequest)
		case r.SubscribedTopics == nil && r.SubscribedRegex == nil:
			return nil, fmt.Errorf("%w: either SubscribedTopicNames or SubscribedTopicRegex must be set when (re-)joining", ErrInvalidRequest)
		}
	}
	if r.SubscribedRegex == nil || *r.SubscribedRegex == "" {
		return nil, nil
	}
	// Kafka matches the whole topic name.
	re, err := regexp.Compile("^(?:" + *r.SubscribedRegex + ")$")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRegex, err)
	}
	return re, nil
}

// heartbeatMemberLocked finds (or, joining, creates) the member of r and
// checks its epoch and instance id. isNew tells that the group gained a
// member, which changes the group's subscriptions.
func (c *Coordinator) heartbeatMemberLocked(g *groupState, r ConsumerHeartbeat) (m *cmember, isNew bool, err error) {
	cg := g.cg
	id := r.MemberID
	if id == "" {
		id = newMemberID(r.ClientID) // v0: the coordinator names new members
	}
	instance := ""
	if r.InstanceID != nil {
		instance = *r.InstanceID
	}
	if r.MemberEpoch != epochJoin {
		m = cg.members[id]
		if m == nil {
			return nil, false, fmt.Errorf("%w: %q in group %q", ErrUnknownMember, id, g.name)
		}
		if instance != "" && cg.static[instance] != id {
			return nil, false, fmt.Errorf("%w: instance %q is now member %q", ErrFencedInstanceID, instance, cg.static[instance])
		}
		if err := checkMemberEpoch(m, r.MemberEpoch, r.Owned); err != nil {
			return nil, false, err
		}
		return m, false, nil
	}
	if old, ok := cg.static[instance]; ok && instance != "" && old != id {
		om := cg.members[old]
		if !om.left {
			return nil, false, fmt.Errorf("%w: instance %q is held by member %q", ErrUnreleasedInstanceID, instance, old)
		}
		// A static member came back within its session: the new member id
		// takes over the old one's assignment without a rebalance.
		c.renameConsumerMemberLocked(g, om, id)
		om.left, om.epoch, om.previousEpoch = false, epochJoin, epochJoin
		c.logger.Info("static group member rejoined", "group", g.name, "instance", instance, "member", id, "previous_member", old)
		return om, false, nil
	}
	if m = cg.members[id]; m != nil {
		// A member that rejoins with epoch 0 (it lost a response, or
		// restarted its state) keeps what it holds and gets it all again;
		// a static member that had left for now is back.
		if m.left {
			m.left, m.epoch, m.previousEpoch = false, epochJoin, epochJoin
		}
		return m, false, nil
	}
	m = &cmember{id: id, instanceID: instance, assignor: "", assigned: partSet{}, revoking: partSet{},
		assignedAt: map[topicPart]int32{}, rebalanceTimeout: r.RebalanceTimeout}
	cg.members[id] = m
	if instance != "" {
		cg.static[instance] = id
	}
	c.logger.Info("group member joined", "group", g.name, "member", id, "instance", instance, "protocol", "consumer")
	return m, true, nil
}

// checkMemberEpoch is Kafka's fencing rule: a member must be at its epoch,
// or at the one before it while owning no more than it is assigned (the
// response that raised its epoch may have been lost).
func checkMemberEpoch(m *cmember, epoch int32, owned Assignment) error {
	switch {
	case epoch > m.epoch:
		return fmt.Errorf("%w: member epoch %d is ahead of the coordinator's %d", ErrFencedMemberEpoch, epoch, m.epoch)
	case epoch < m.epoch && (epoch != m.previousEpoch || owned == nil || !owned.set().subsetOf(m.assigned)):
		return fmt.Errorf("%w: member epoch %d is behind the coordinator's %d", ErrFencedMemberEpoch, epoch, m.epoch)
	}
	return nil
}

// renameConsumerMemberLocked moves m (and what it holds) to a new id.
func (c *Coordinator) renameConsumerMemberLocked(g *groupState, m *cmember, id string) {
	cg := g.cg
	old := m.id
	delete(cg.members, old)
	m.id = id
	cg.members[id] = m
	if t, ok := cg.target[old]; ok {
		delete(cg.target, old)
		cg.target[id] = t
	}
	for tp, holder := range cg.holders {
		if holder == old {
			cg.holders[tp] = id
		}
	}
	if m.instanceID != "" {
		cg.static[m.instanceID] = id
	}
}

// consumerLeaveLocked handles epoch -1 (leave) and -2 (a static member
// leaving for now: it keeps its partitions until its session times out).
func (c *Coordinator) consumerLeaveLocked(r ConsumerHeartbeat) (ConsumerHeartbeatResult, error) {
	g := c.groups[r.Group]
	if g == nil || g.cg == nil {
		return ConsumerHeartbeatResult{}, fmt.Errorf("%w: group %q has no member %q", ErrUnknownMember, r.Group, r.MemberID)
	}
	id := r.MemberID
	if r.InstanceID != nil {
		cur, ok := g.cg.static[*r.InstanceID]
		switch {
		case !ok:
			return ConsumerHeartbeatResult{}, fmt.Errorf("%w: instance %q", ErrUnknownMember, *r.InstanceID)
		case cur != id:
			return ConsumerHeartbeatResult{}, fmt.Errorf("%w: instance %q is member %q", ErrFencedInstanceID, *r.InstanceID, cur)
		}
	}
	m := g.cg.members[id]
	if m == nil {
		return ConsumerHeartbeatResult{}, fmt.Errorf("%w: %q in group %q", ErrUnknownMember, id, r.Group)
	}
	res := ConsumerHeartbeatResult{MemberID: id, MemberEpoch: r.MemberEpoch, HeartbeatInterval: c.cfg.ConsumerHeartbeatInterval}
	if r.MemberEpoch == epochStaticLeft {
		m.left = true
		m.epoch = epochStaticLeft
		stopTimer(&m.revokeBy)
		c.logger.Info("static group member left for now", "group", g.name, "member", id, "instance", m.instanceID)
	} else {
		c.removeConsumerMemberLocked(g, m, "member left")
	}
	if err := c.storeConsumerLocked(g, nil); err != nil {
		return ConsumerHeartbeatResult{}, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return res, nil
}

// removeConsumerMemberLocked drops m, frees what it held and reassigns.
func (c *Coordinator) removeConsumerMemberLocked(g *groupState, m *cmember, reason string) {
	cg := g.cg
	stopTimer(&m.expiry)
	stopTimer(&m.revokeBy)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != "" && cg.static[m.instanceID] == m.id {
		delete(cg.static, m.instanceID)
	}
	c.setHoldingsLocked(cg, m, partSet{}, partSet{})
	c.logger.Info("group member removed", "group", g.name, "member", m.id, "reason", reason, "protocol", "consumer")
	c.maybeReassignLocked(g, true, reason)
	c.forgetIfUnusedLocked(g)
	c.storeConsumerInBackgroundLocked(g)
}

// touchConsumerLocked restarts m's session timer.
func (c *Coordinator) touchConsumerLocked(g *groupState, m *cmember) {
	c.armLocked(&m.expiry, c.cfg.ConsumerSessionTimeout, g, func() {
		if g.cg != nil && g.cg.members[m.id] == m {
			c.removeConsumerMemberLocked(g, m, "session timeout")
		}
	})
}

func stopTimer(t **time.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// regexRefresh is how often a regex subscription is matched against the
// topics again (Kafka refreshes them on a similar period): matching every
// heartbeat would cost members x topics regex runs under the mutex.
const regexRefresh = 10 * time.Second

// subscribedTopicsLocked resolves m's subscription (names and regex) to
// topics that exist.
func (c *Coordinator) subscribedTopicsLocked(m *cmember, now time.Time) []TopicInfo {
	if m.re != nil && now.Sub(m.regexResolved) >= regexRefresh {
		m.regexTopics = m.regexTopics[:0]
		for _, t := range c.topics.AllTopics() {
			if m.re.MatchString(t.Name) { // internal topics too, as in Kafka
				m.regexTopics = append(m.regexTopics, t.Name)
			}
		}
		m.regexResolved = now
	}
	var out []TopicInfo
	for _, names := range [][]string{m.topics, m.regexTopics} {
		for _, name := range names {
			if t, ok := c.topics.Topic(name); ok && !slices.ContainsFunc(out, func(o TopicInfo) bool { return o.Name == name }) {
				out = append(out, t)
			}
		}
	}
	return out
}

// maybeReassignLocked bumps the group epoch and computes a new target when
// force is set or the subscribed topics changed (created, deleted, grown).
func (c *Coordinator) maybeReassignLocked(g *groupState, force bool, reason string) {
	cg := g.cg
	now := c.now()
	subs, union, key := c.subscriptionsLocked(cg, now)
	assignor := cg.chooseAssignor()
	if !force && key == cg.subscribed && assignor == cg.assignor {
		return
	}
	cg.subscribed, cg.assignor = key, assignor
	cg.epoch++
	g.kept = true
	members := make([]assignMember, 0, len(cg.members))
	for _, id := range slices.Sorted(maps.Keys(cg.members)) {
		m := cg.members[id]
		am := assignMember{id: id, instanceID: m.instanceID, topics: map[[16]byte]bool{}, current: cg.target[id]}
		for _, t := range subs[id] {
			am.topics[t.ID] = true
		}
		members = append(members, am)
	}
	topics := slices.SortedFunc(maps.Values(union), func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	cg.assignmentEpoch = cg.epoch
	if hold := c.restartHold(g, now); hold > 0 {
		// Membership is not persisted: members of the previous coordinator
		// may still consume until their next heartbeat tells them it
		// restarted. Until they had time to hear it, nobody gets a
		// partition, so none is consumed twice at once.
		cg.target = map[string]partSet{}
		c.armLocked(&cg.holdTimer, hold, g, func() {
			if g.cg == cg {
				c.maybeReassignLocked(g, true, "members of the previous coordinator had time to rejoin")
				c.storeConsumerInBackgroundLocked(g)
			}
		})
		c.logger.Info("group assignment held after a coordinator restart", "group", g.name, "for", hold)
		return
	}
	cg.target = assign(assignor, members, topics)
	c.logger.Info("group target assignment", "group", g.name, "epoch", cg.epoch, "assignor", assignor, "members", len(members), "topics", len(topics), "reason", reason)
}

// subscriptionsLocked resolves each member's subscription; key sums up
// the subscribed topics' metadata, so that a change of it (a topic
// created, deleted or grown) is seen.
func (c *Coordinator) subscriptionsLocked(cg *consumerGroup, now time.Time) (subs map[string][]TopicInfo, union map[string]TopicInfo, key string) {
	subs, union = map[string][]TopicInfo{}, map[string]TopicInfo{}
	for id, m := range cg.members {
		subs[id] = c.subscribedTopicsLocked(m, now)
		for _, t := range subs[id] {
			union[t.Name] = t
		}
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(union)) {
		t := union[name]
		fmt.Fprintf(&b, "%s/%x/%d;", name, t.ID, t.Partitions)
	}
	return subs, union, b.String()
}

// subscriptionKeyLocked is subscriptionsLocked's key alone.
func (c *Coordinator) subscriptionKeyLocked(cg *consumerGroup, now time.Time) string {
	_, _, key := c.subscriptionsLocked(cg, now)
	return key
}

// restartHold is how much longer a group that existed before this
// coordinator loaded must wait before partitions are assigned: two
// heartbeat intervals from the load, time for every old member to hear
// UNKNOWN_MEMBER_ID and stop.
func (c *Coordinator) restartHold(g *groupState, now time.Time) time.Duration {
	if !g.replayed || g.cg.restored {
		return 0
	}
	return c.loadedAt.Add(2 * c.cfg.ConsumerHeartbeatInterval).Sub(now)
}

// chooseAssignor is the assignor most members ask for (ties: the one
// listed first in Assignors), or the default.
func (cg *consumerGroup) chooseAssignor() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := Assignors[0]
	for _, a := range Assignors {
		if votes[a] > votes[best] {
			best = a
		}
	}
	return best
}

// state is the group's state as ConsumerGroupDescribe names it.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// noTopics is the Topics of a coordinator that was given none.
type noTopics struct{}

func (noTopics) Topic(string) (TopicInfo, bool)       { return TopicInfo{}, false }
func (noTopics) TopicByID([16]byte) (TopicInfo, bool) { return TopicInfo{}, false }
func (noTopics) AllTopics() []TopicInfo               { return nil }

// checkConsumerCommitLocked applies KIP-848's commit rule: the member must
// exist and commit with its epoch. A commit with an older epoch is taken
// when the member has held every partition it commits since that epoch or
// earlier (KIP-1251): the heartbeat that raised its epoch may have crossed
// the commit.
func (c *Coordinator) checkConsumerCommitLocked(g *groupState, r Commit) error {
	if r.MemberID == "" && r.Generation < 0 {
		return fmt.Errorf("%w: group %q has members; commit as one of them", ErrUnknownMember, r.Group)
	}
	m := g.cg.members[r.MemberID]
	if m == nil {
		return fmt.Errorf("%w: %q in group %q", ErrUnknownMember, r.MemberID, r.Group)
	}
	if r.Generation == m.epoch {
		return nil
	}
	if r.Generation < 0 || r.Generation > m.epoch {
		return fmt.Errorf("%w: commit with epoch %d, the member is at %d", ErrStaleMemberEpoch, r.Generation, m.epoch)
	}
	for tp := range r.Offsets {
		t, ok := c.topics.Topic(tp.Topic)
		id := topicPart{t.ID, tp.Partition}
		at, held := m.assignedAt[id]
		if !ok || !held || at > r.Generation {
			return fmt.Errorf("%w: commit with epoch %d, the member is at %d and did not hold %s-%d then", ErrStaleMemberEpoch, r.Generation, m.epoch, tp.Topic, tp.Partition)
		}
	}
	return nil
}

// CheckOffsetFetch applies KIP-848's OffsetFetch rule (v9+): a member of a
// consumer group that names itself must exist and be at its epoch.
// Requests without a member id (admin tools) always pass.
func (c *Coordinator) CheckOffsetFetch(group, memberID string, epoch int32) error {
	if memberID == "" || epoch < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || g.cg == nil {
		return nil
	}
	m := g.cg.members[memberID]
	switch {
	case m == nil:
		return fmt.Errorf("%w: %q in group %q", ErrUnknownMember, memberID, group)
	case m.epoch != epoch:
		return fmt.Errorf("%w: fetch with epoch %d, the member is at %d", ErrStaleMemberEpoch, epoch, m.epoch)
	}
	return nil
}
