package replica

import (
	"fmt"
	"slices"
	"time"
)

// follower is the leader's view of one follower, from its Fetch requests
// (Kafka's ReplicaState).
type follower struct {
	// leo is the fetch offset of its last fetch in this leader epoch, -1
	// before one.
	leo int64
	// lastFetchLeaderLEO is the leader's LEO when that fetch was read.
	lastFetchLeaderLEO int64
	lastFetch          time.Time
	// lastCaughtUp is the latest time at which the follower is known to
	// have had everything the leader had; zero is never.
	lastCaughtUp time.Time
}

func newFollower() *follower {
	return &follower{leo: UndefinedOffset, lastFetchLeaderLEO: UndefinedOffset}
}

// fetched records a fetch at offset read when the leader's LEO was
// leaderLEO. A fetch at the leader's end proves the follower caught up
// now; one that reaches where the leader was at the previous fetch proves
// it was caught up then. The second rule keeps a follower in sync under a
// stream of small produces, where each fetch is just behind.
func (f *follower) fetched(offset, leaderLEO int64, now time.Time) {
	switch {
	case offset >= leaderLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, now)
	case offset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = later(f.lastCaughtUp, f.lastFetch)
	}
	f.leo = offset
	f.lastFetchLeaderLEO = max(leaderLEO, f.lastFetchLeaderLEO)
	f.lastFetch = now
}

// reset starts a new leader epoch (Kafka's resetReplicaState). ISR members
// get the benefit of the doubt for one lag period; others count as never
// caught up, so they do not hold the HW back, nor rejoin before a fetch
// proves them caught up. A leader that just took over has fresh followers
// (it knows nothing of their logs); a re-elected one keeps their LEOs.
// (Kafka also sets the last fetch's leader LEO to the epoch start; with
// the max in fetched that changes no outcome, so it is left out.)
func (f *follower) reset(now time.Time, isNewLeader, inISR bool) {
	var t time.Time
	if inISR {
		t = now
	}
	f.lastCaughtUp = t
	if !isNewLeader {
		f.lastFetch = t
	}
}

// caughtUp is Kafka's isCaughtUp: at the leader's end, or caught up within
// the lag. (Kafka tests equality with the leader's LEO; >= also covers a
// caller that gives the durable end as LEO.)
func (f *follower) caughtUp(leaderLEO int64, now time.Time, lag time.Duration) bool {
	return f.leo >= leaderLEO || now.Sub(f.lastCaughtUp) <= lag
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// setFollowers makes the follower set match replicas: new ones start
// unknown, removed ones are forgotten.
func (m *Machine) setFollowers(replicas []int32) {
	for id := range m.followers {
		if !slices.Contains(replicas, id) {
			delete(m.followers, id)
		}
	}
	for _, id := range replicas {
		if _, ok := m.followers[id]; !ok && id != m.self {
			m.followers[id] = newFollower()
		}
	}
}

// LeaderUpdate is what a leader-side event decided.
type LeaderUpdate struct {
	// HW is the high watermark after the event.
	HW int64
	// Advanced: the HW moved up in this event; acks=all appends waiting
	// on it may be done (AppendStatus) and long-polling fetches can wake.
	Advanced bool
	// Change is an ISR change to write now, nil if none (see ISRChange).
	Change *ISRChange
}

// FollowerFetched records a follower's fetch after the leader has read it
// without error (Kafka skips failed reads too): replica fetched at
// fetchOffset while the leader's log stood at end. It may propose adding
// the follower to the ISR and may advance the HW.
func (m *Machine) FollowerFetched(replica int32, fetchOffset int64, end LogEnd, now time.Time) (LeaderUpdate, error) {
	if m.role != RoleLeader {
		return LeaderUpdate{HW: m.hw}, fmt.Errorf("%w: fetch from %d", ErrNotLeader, replica)
	}
	f := m.followers[replica]
	if f == nil {
		return LeaderUpdate{HW: m.hw}, fmt.Errorf("%w: fetch from agent %d, replicas %v", ErrNotReplica, replica, m.state.Replicas)
	}
	f.fetched(fetchOffset, end.LEO, now)
	return m.update(end, now, m.maybeExpand(replica, f)), nil
}

// CheckFollowerFetch is the leader's check of a follower Fetch before
// reading it: the epoch fence, that the sender is a replica, and that it
// does not ask below the local log start: the older records are in the
// bucket, and a follower copies only the local tail.
func (m *Machine) CheckFollowerFetch(replica, currentLeaderEpoch int32, fetchOffset, localStart int64) error {
	if err := m.CheckEpoch(currentLeaderEpoch, true); err != nil {
		return err
	}
	if m.followers[replica] == nil {
		return fmt.Errorf("%w: fetch from agent %d, replicas %v", ErrNotReplica, replica, m.state.Replicas)
	}
	if fetchOffset < localStart {
		return fmt.Errorf("%w: offset %d, local start %d", ErrBelowLocalStart, fetchOffset, localStart)
	}
	return nil
}

// LeaderEndMoved recomputes the HW after the leader's own log moved (an
// append, or an fsync under log.flush=always). With an ISR of the leader
// alone this is what advances the HW.
func (m *Machine) LeaderEndMoved(end LogEnd, now time.Time) (LeaderUpdate, error) {
	if m.role != RoleLeader {
		return LeaderUpdate{HW: m.hw}, ErrNotLeader
	}
	return m.update(end, now, nil), nil
}

// CheckISR is the periodic ISR check (Kafka runs it every half lag
// period): it proposes removing every ISR follower not caught up within
// replica.lag.time.max.ms, and every ineligible one (dead or draining)
// that has not fetched for half that, unless a change is in flight. The
// second rule stands in for Kafka's controller, which removes fenced and
// shutting-down brokers: a follower at the leader's end counts as caught
// up however long it is silent, so a dead one would otherwise stay in the
// ISR (holding acks=all) until the next append. The fetch condition keeps
// a follower that gossip wrongly reports dead but that still fetches. It also
// recomputes the HW, which time alone can free: a caught-up follower
// outside the ISR stops holding it back once its lag expires.
func (m *Machine) CheckISR(end LogEnd, now time.Time) (LeaderUpdate, error) {
	if m.role != RoleLeader {
		return LeaderUpdate{HW: m.hw}, ErrNotLeader
	}
	var change *ISRChange
	if m.pending == nil {
		var out []int32
		for _, id := range m.state.ISR {
			if f := m.followers[id]; id != m.self && (f == nil || m.silentIneligible(id, f, now) || !f.caughtUp(end.LEO, now, m.cfg.ReplicaLagTimeMax)) {
				out = append(out, id)
			}
		}
		if len(out) > 0 {
			change = m.propose(ISRShrink, out)
		}
	}
	return m.update(end, now, change), nil
}

// silentIneligible: an ineligible follower with no fetch for half the lag
// limit.
func (m *Machine) silentIneligible(id int32, f *follower, now time.Time) bool {
	return !m.eligible(id) && now.Sub(f.lastFetch) > m.cfg.ReplicaLagTimeMax/2
}

func (m *Machine) update(end LogEnd, now time.Time, change *ISRChange) LeaderUpdate {
	advanced := m.advanceHW(end, now)
	return LeaderUpdate{HW: m.hw, Advanced: advanced, Change: change}
}

// advanceHW is Kafka's maybeIncrementLeaderHW: the least LEO among the
// maximal ISR and the followers that are caught up and may join it (so
// that a follower catching up to a lone leader is not outrun forever),
// capped by the leader's durable end. It never moves back, and does not
// move at all while the committed ISR is below min.insync.replicas
// (KIP-966): records appended then are not committed by too few copies.
func (m *Machine) advanceHW(end LogEnd, now time.Time) bool {
	if m.underMinISR() {
		return false
	}
	hw := end.Durable
	for id, f := range m.followers {
		if f.leo < hw && (m.inMaximalISR(id) || m.eligible(id) && f.caughtUp(end.LEO, now, m.cfg.ReplicaLagTimeMax)) {
			hw = f.leo
		}
	}
	if hw > m.hw {
		m.hw = hw
		return true
	}
	return false
}

func (m *Machine) eligible(id int32) bool { return !slices.Contains(m.ineligible, id) }

// FollowerStatus is the leader's view of one follower, for metrics and
// DescribeLogDirs-style reports.
type FollowerStatus struct {
	Replica      int32
	LEO          int64 // -1 before its first fetch in this leader epoch
	InISR        bool  // in the committed ISR
	LastFetch    time.Time
	LastCaughtUp time.Time
}

// Followers lists the followers in replica order; empty unless leading.
func (m *Machine) Followers() []FollowerStatus {
	var out []FollowerStatus
	for _, id := range m.state.Replicas {
		if f := m.followers[id]; f != nil {
			out = append(out, FollowerStatus{Replica: id, LEO: f.leo, InISR: slices.Contains(m.state.ISR, id),
				LastFetch: f.lastFetch, LastCaughtUp: f.lastCaughtUp})
		}
	}
	return out
}
