package replica

import (
	"fmt"
	"slices"
	"time"
)

// Role is what this replica is for its partition.
type Role int

const (
	// RoleNone: no partition state applied yet.
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Machine is one partition's replica on this agent. It is not safe for
// concurrent use: its owner calls it under one lock (see the package doc).
type Machine struct {
	self  int32
	cfg   Config
	role  Role
	state State // the committed state last applied; LeaderEpoch -1 before any
	hw    int64
	// ineligible agents may not join the ISR (Kafka's fenced or
	// shutting-down brokers); the membership layer sets them.
	ineligible []int32

	// Leader side; zero while following.
	epochStart int64 // LEO when this leader epoch began; -1 when not leading
	followers  map[int32]*follower
	pending    *ISRChange

	// Follower side; ActionWait while leading.
	action FollowerAction
	// truncFinal is whether the current ActionTruncate ends the truncation
	// (else the follower asks OffsetForLeaderEpoch again after it).
	truncFinal bool
	// queried is the epoch the last ActionQueryEpoch asked about.
	queried int32
}

// New returns a machine for agent self with no partition state. hw is the
// high watermark this replica knew before (there is no checkpoint of it
// yet, so usually the log start offset): a follower whose leader cannot
// place its epochs truncates to it, and a new leader starts from it.
func New(self int32, cfg Config, hw int64) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self < 0 {
		return nil, fmt.Errorf("replica: agent id %d is negative", self)
	}
	return &Machine{
		self:       self,
		cfg:        cfg,
		state:      State{Leader: -1, LeaderEpoch: -1, StateEpoch: -1},
		hw:         max(hw, 0),
		epochStart: UndefinedOffset,
		action:     FollowerAction{Kind: ActionWait, Leader: -1, LeaderEpoch: -1},
	}, nil
}

// SetConfig applies changed settings (min.insync.replicas is altered at
// run time). They take effect from the next call; an append already
// waiting is judged by the new value.
func (m *Machine) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m.cfg = cfg
	return nil
}

// SetIneligible replaces the set of agents that may not join the ISR
// (dead or draining, as membership reports them). They can still fetch
// and stay in the ISR until they lag.
func (m *Machine) SetIneligible(agents []int32) {
	m.ineligible = slices.Clone(agents)
}

func (m *Machine) Role() Role { return m.role }

// State is the committed partition state last applied.
func (m *Machine) State() State { return m.state.clone() }

// LeaderEpoch is the current leader epoch, -1 before any state.
func (m *Machine) LeaderEpoch() int32 { return m.state.LeaderEpoch }

// HighWatermark is the leader's HW, or on a follower the leader's HW as
// last fetched (bounded by the local log end).
func (m *Machine) HighWatermark() int64 { return m.hw }

// EpochStartOffset is where the current leader epoch began on this
// leader's log, -1 when not leading. Kafka answers ListOffsets with
// OFFSET_NOT_AVAILABLE while the HW is below it.
func (m *Machine) EpochStartOffset() int64 { return m.epochStart }

// CheckEpoch is Kafka's check of a request's current leader epoch: -1
// (absent) passes; older is ErrFencedLeaderEpoch; newer is
// ErrUnknownLeaderEpoch; then, with leaderOnly, a replica that does not
// lead is ErrNotLeader. The epoch is checked first, as in Kafka, so that a
// client with a stale epoch learns to refresh metadata.
func (m *Machine) CheckEpoch(requestEpoch int32, leaderOnly bool) error {
	if requestEpoch >= 0 {
		switch cur := m.state.LeaderEpoch; {
		case requestEpoch < cur:
			return fmt.Errorf("%w: %d < %d", ErrFencedLeaderEpoch, requestEpoch, cur)
		case requestEpoch > cur:
			return fmt.Errorf("%w: %d > %d", ErrUnknownLeaderEpoch, requestEpoch, cur)
		}
	}
	if leaderOnly && m.role != RoleLeader {
		return fmt.Errorf("%w: leader is %d", ErrNotLeader, m.state.Leader)
	}
	return nil
}

// checkNewState refuses states that are malformed, do not name this
// agent, or are older than the applied one. Equal epochs pass: the same
// state is read again after a lost CAS or a reconcile.
func (m *Machine) checkNewState(st State) error {
	if err := st.validate(); err != nil {
		return err
	}
	if !slices.Contains(st.Replicas, m.self) {
		return fmt.Errorf("%w: agent %d not in %v", ErrNotReplica, m.self, st.Replicas)
	}
	if st.StateEpoch < m.state.StateEpoch || st.LeaderEpoch < m.state.LeaderEpoch {
		return fmt.Errorf("%w: state epoch %d, leader epoch %d; applied %d, %d",
			ErrStaleState, st.StateEpoch, st.LeaderEpoch, m.state.StateEpoch, m.state.LeaderEpoch)
	}
	return nil
}

// BecomeLeader applies a state that names this agent leader: on taking
// over, on a new epoch, and on every later read of the state (an ISR or
// replica change, a reconcile, a re-read after a lost CAS). end is the
// local log's end once the follower fetcher has stopped; in a new epoch
// end.LEO is the epoch's start offset.
//
// As Kafka's makeLeader, a new epoch resets every follower's fetch state
// (an ISR member counts as caught up now, others as never); the same epoch
// only adds and drops followers. Either way any ISR change in flight is
// forgotten: st is the committed truth.
func (m *Machine) BecomeLeader(st State, end LogEnd, now time.Time) (LeaderUpdate, error) {
	if err := m.checkNewState(st); err != nil {
		return LeaderUpdate{HW: m.hw}, err
	}
	if st.Leader != m.self {
		return LeaderUpdate{HW: m.hw}, fmt.Errorf("%w: BecomeLeader on agent %d for leader %d", ErrInvalidState, m.self, st.Leader)
	}
	isNewLeader := m.role != RoleLeader
	isNewEpoch := isNewLeader || st.LeaderEpoch > m.state.LeaderEpoch
	if isNewLeader {
		// A follower's HW is the old leader's, which may be ahead of what
		// this log holds durably; the HW never exceeds the durable end.
		m.hw = min(m.hw, end.Durable)
		m.followers = map[int32]*follower{}
	}
	m.role = RoleLeader
	m.action = FollowerAction{Kind: ActionWait, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch}
	m.setFollowers(st.Replicas, now)
	if isNewEpoch {
		m.epochStart = end.LEO
		for id, f := range m.followers {
			f.reset(now, isNewLeader, slices.Contains(st.ISR, id))
		}
	}
	m.state = st.clone()
	m.pending = nil
	return m.update(end, now, nil), nil
}

// BecomeFollower applies a state whose leader is another agent (or -1:
// none) and returns what the follower should do. A new leader or epoch
// starts over from finding the divergence point; the same leader and
// epoch (an ISR change, a reconcile) keeps the current action. log is this
// replica's own log.
func (m *Machine) BecomeFollower(st State, log EpochLog) (FollowerAction, error) {
	if err := m.checkNewState(st); err != nil {
		return m.action, err
	}
	if st.Leader == m.self {
		return m.action, fmt.Errorf("%w: BecomeFollower on agent %d, which the state names leader", ErrInvalidState, m.self)
	}
	restart := m.role != RoleFollower || st.Leader != m.state.Leader || st.LeaderEpoch > m.state.LeaderEpoch
	m.role = RoleFollower
	m.followers, m.pending, m.epochStart = nil, nil, UndefinedOffset
	m.state = st.clone()
	if restart {
		m.hw = min(m.hw, log.LogEndOffset())
		m.startTruncation(log)
	}
	return m.action, nil
}
