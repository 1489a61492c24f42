package replica

import "fmt"

// ActionKind is the next step of a follower's fetcher.
type ActionKind int

const (
	// ActionWait: nothing to do until the next partition state (no
	// leader, or this replica leads).
	ActionWait ActionKind = iota
	// ActionQueryEpoch: send OffsetForLeaderEpoch to Leader with
	// CurrentLeaderEpoch = LeaderEpoch and LeaderEpoch = Epoch (this log's
	// latest epoch), then call EpochAnswered.
	ActionQueryEpoch
	// ActionTruncate: cut the local log at Offset (log.TruncateTo; a no-op
	// at or past the end), then call Applied.
	ActionTruncate
	// ActionRestartAt: drop the whole local log and start it empty at
	// Offset (log.TruncateTo(log start), then log.RestartAt(Offset)): the
	// records below are in the bucket. Then call Applied.
	ActionRestartAt
	// ActionFetch: Fetch from Leader at Offset with CurrentLeaderEpoch =
	// LeaderEpoch, append what comes back, then call Fetched (or
	// FetchOutOfRange).
	ActionFetch
)

func (k ActionKind) String() string {
	switch k {
	case ActionWait:
		return "wait"
	case ActionQueryEpoch:
		return "query-epoch"
	case ActionTruncate:
		return "truncate"
	case ActionRestartAt:
		return "restart-at"
	case ActionFetch:
		return "fetch"
	}
	return fmt.Sprintf("ActionKind(%d)", int(k))
}

// FollowerAction is what a follower's fetcher does next. The fetcher hands
// the action back with its result; a result for an action that is no
// longer current (the state changed meanwhile) is ErrStaleAction and
// changes nothing.
type FollowerAction struct {
	Kind        ActionKind
	Leader      int32
	LeaderEpoch int32 // the current leader epoch, sent in every request
	Epoch       int32 // ActionQueryEpoch: the epoch to ask about
	Offset      int64 // ActionTruncate, ActionRestartAt, ActionFetch
}

func (a FollowerAction) String() string {
	s := fmt.Sprintf("%s leader=%d leader-epoch=%d", a.Kind, a.Leader, a.LeaderEpoch)
	switch a.Kind {
	case ActionQueryEpoch:
		s += fmt.Sprintf(" epoch=%d", a.Epoch)
	case ActionTruncate, ActionRestartAt, ActionFetch:
		s += fmt.Sprintf(" offset=%d", a.Offset)
	}
	return s
}

// FollowerAction is the current action; ActionWait unless following.
func (m *Machine) FollowerAction() FollowerAction { return m.action }

func (m *Machine) next(kind ActionKind, epoch int32, offset int64) FollowerAction {
	m.action = FollowerAction{Kind: kind, Leader: m.state.Leader, LeaderEpoch: m.state.LeaderEpoch, Epoch: epoch, Offset: offset}
	return m.action
}

// startTruncation begins following a new leader or epoch: ask where this
// log's latest epoch ends on the leader. A log without epochs (empty, or
// restarted from the bucket) cannot be placed and truncates to the HW, as
// Kafka does.
func (m *Machine) startTruncation(log EpochLog) {
	if m.state.Leader < 0 {
		m.next(ActionWait, 0, 0)
		return
	}
	if latest := log.LatestEpoch(); latest >= 0 {
		m.queried = latest
		m.next(ActionQueryEpoch, latest, 0)
		return
	}
	m.truncFinal = true
	m.next(ActionTruncate, 0, m.hw)
}

func (m *Machine) current(done FollowerAction, kinds ...ActionKind) error {
	if m.role != RoleFollower {
		return fmt.Errorf("%w: %s", ErrNotFollower, m.role)
	}
	for _, k := range kinds {
		if done == m.action && done.Kind == k {
			return nil
		}
	}
	return fmt.Errorf("%w: %v, current %v", ErrStaleAction, done, m.action)
}

// EpochAnswered takes the leader's answer to an ActionQueryEpoch and
// decides the truncation, by Kafka's rules (AbstractFetcherThread's
// getOffsetTruncationState), where the follower's own end for an epoch
// comes from log.EndOffsetForEpoch:
//
//   - leader end offset undefined (-1): the leader cannot place the
//     epoch; truncate to the HW.
//   - leader epoch undefined, end defined (old leaders): truncate to the
//     leader's end.
//   - the follower does not know any epoch at or below the answer: same.
//   - the follower's largest epoch at or below the answer is a smaller
//     one (it lacks the leader's): truncate to where that epoch ends here,
//     then ask again about it.
//   - the follower has the answered epoch: truncate to the smaller of the
//     two ends; done.
//
// Every truncation is also capped by the local log end.
func (m *Machine) EpochAnswered(done FollowerAction, ans EpochEndOffset, log EpochLog) (FollowerAction, error) {
	if err := m.current(done, ActionQueryEpoch); err != nil {
		return m.action, err
	}
	if ans.Epoch > done.Epoch {
		return m.action, fmt.Errorf("%w: asked about %d, answered %d", ErrInvalidEpochAnswer, done.Epoch, ans.Epoch)
	}
	leo := log.LogEndOffset()
	final, to := true, int64(0)
	switch {
	case ans.EndOffset == UndefinedOffset:
		to = m.hw
	case ans.Epoch == UndefinedEpoch:
		to = ans.EndOffset
	default:
		switch ownEpoch, ownEnd := log.EndOffsetForEpoch(ans.Epoch); {
		case ownEnd == UndefinedOffset:
			to = ans.EndOffset
		case ownEpoch != ans.Epoch:
			to, final = ownEnd, false
		default:
			to = min(ownEnd, ans.EndOffset)
		}
	}
	m.truncFinal = final
	return m.next(ActionTruncate, 0, min(to, leo)), nil
}

// Applied reports that an ActionTruncate or ActionRestartAt was carried
// out on log. Next is another epoch query after an intermediate
// truncation, else fetching from the log end (the log may have cut below
// the asked offset, at the start of a batch, so its end is the truth).
func (m *Machine) Applied(done FollowerAction, log EpochLog) (FollowerAction, error) {
	if err := m.current(done, ActionTruncate, ActionRestartAt); err != nil {
		return m.action, err
	}
	leo := log.LogEndOffset()
	if done.Kind == ActionRestartAt {
		// Nothing below the new start is local, so the HW cannot be.
		m.hw = leo
		return m.next(ActionFetch, 0, leo), nil
	}
	m.hw = min(m.hw, leo)
	// An intermediate truncation always drops the latest epoch; if the
	// log says otherwise, asking again would loop, so fetch instead.
	if latest := log.LatestEpoch(); !m.truncFinal && latest >= 0 && latest < m.queried {
		m.queried = latest
		return m.next(ActionQueryEpoch, latest, 0), nil
	}
	return m.next(ActionFetch, 0, leo), nil
}

// Fetched reports a successful ActionFetch whose records (if any) are
// appended to log, with the leader's HW from the response. The follower's
// HW follows the leader's, bounded by its own end (it may move back after
// a leader change, as in Kafka).
func (m *Machine) Fetched(done FollowerAction, leaderHW int64, log EpochLog) (FollowerAction, error) {
	if err := m.current(done, ActionFetch); err != nil {
		return m.action, err
	}
	leo := log.LogEndOffset()
	m.hw = min(max(leaderHW, 0), leo)
	return m.next(ActionFetch, 0, leo), nil
}

// FetchOutOfRange reports that the leader refused an ActionFetch's offset
// (OFFSET_OUT_OF_RANGE or OFFSET_MOVED_TO_TIERED_STORAGE), with the
// leader's local log start and log end as it answers ListOffsets. As
// Kafka's fetchOffsetAndTruncate:
//
//   - the leader ends below this log (an unclean election): truncate to
//     the leader's end;
//   - this log ends below the leader's local start (it was away long, or
//     it is new): restart empty at the local start; the rest is in the
//     bucket, so a new replica copies only the tail;
//   - otherwise fetch again from the log end.
func (m *Machine) FetchOutOfRange(done FollowerAction, leaderLocalStart, leaderEnd int64, log EpochLog) (FollowerAction, error) {
	if err := m.current(done, ActionFetch); err != nil {
		return m.action, err
	}
	leo := log.LogEndOffset()
	switch {
	case leaderEnd < leo:
		m.truncFinal = true
		return m.next(ActionTruncate, 0, max(leaderEnd, 0)), nil
	case leaderLocalStart > leo:
		return m.next(ActionRestartAt, 0, leaderLocalStart), nil
	}
	return m.next(ActionFetch, 0, leo), nil
}
