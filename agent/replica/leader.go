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
	// lastFetch is the time of its last fetch; zero before one under this
	// leader.
	lastFetch time.Time
	// awaitedSince is when this leader began to expect its fetches: when
	// it took over or began an epoch, or when the follower was added. Its
	// silence counts from the later of this and lastFetch, so a leader
	// never takes "no fetch yet" for "no fetch for the lag limit" (Kafka
	// likewise restarts the clock of every ISR member on a leader change).
	awaitedSince time.Time
	// lastCaughtUp is the latest time at which the follower is known to
	// have had everything the leader had; zero is never.
	lastCaughtUp time.Time
	// linkLost is when the follower's last connection to this agent
	// closed, zero while it has one (or fetched since): see
	// FollowerLinkLost.
	linkLost time.Time
}

func newFollower(now time.Time) *follower {
	return &follower{leo: UndefinedOffset, lastFetchLeaderLEO: UndefinedOffset, awaitedSince: now}
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
	f.linkLost = time.Time{}
}

// reset starts a new leader epoch (Kafka's resetReplicaState). ISR members
// get the benefit of the doubt for one lag period; others count as never
// caught up, so they do not hold the HW back, nor rejoin before a fetch
// proves them caught up. A leader that just took over has fresh followers
// (it knows nothing of their logs); a re-elected one keeps their LEOs.
// Either way it awaits every follower's fetches from now.
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
	f.awaitedSince = now
}

// caughtUp is Kafka's isCaughtUp: at the leader's end, or caught up within
// the lag. (Kafka tests equality with the leader's LEO; >= also covers a
// caller that gives the durable end as LEO.)
func (f *follower) caughtUp(leaderLEO int64, now time.Time, lag time.Duration) bool {
	return f.leo >= leaderLEO || now.Sub(f.lastCaughtUp) <= lag
}

// silent: no fetch for longer than the lag limit, counted from when this
// leader began to expect one.
func (f *follower) silent(now time.Time, lag time.Duration) bool {
	return now.Sub(later(f.lastFetch, f.awaitedSince)) > lag
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// setFollowers makes the follower set match replicas: new ones start
// unknown, awaited from now; removed ones are forgotten.
func (m *Machine) setFollowers(replicas []int32, now time.Time) {
	for id := range m.followers {
		if !slices.Contains(replicas, id) {
			delete(m.followers, id)
		}
	}
	for _, id := range replicas {
		if _, ok := m.followers[id]; !ok && id != m.self {
			m.followers[id] = newFollower(now)
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
// period). Unless a change is in flight, it proposes removing every ISR
// follower that
//
//   - is not caught up within replica.lag.time.max.ms (Kafka's rule);
//   - has not fetched at all for replica.lag.time.max.ms;
//   - is ineligible (dead or draining) and has not fetched for half that.
//
// The last two stand in for Kafka's controller. Kafka's leader counts a
// follower at its end as caught up however long it is silent, so on an
// idle partition its own rule never removes a follower that stopped; the
// KRaft controller does, when the broker's heartbeats stop
// (broker.session.timeout.ms) or it shuts down: it fences the broker and
// takes it out of every ISR. Strata has no controller that every agent
// heartbeats to. Gossip is the nearest thing, and the third rule acts on
// it early; but gossip and replication can fail apart (a follower's
// fetches cut off or wedged while its gossip goes on). Left in the ISR, a
// silent follower would be reported in sync (Metadata, the
// under-replicated count), counted for min.insync.replicas, and could be
// elected leader. So the leader trusts its own evidence too: the time
// since the follower's last fetch. Followers long-poll for a fraction of
// the lag limit, so a live one fetches several times per lag period even
// when nothing is written; a leader that just took over counts from then
// (awaitedSince). The ineligible rule keeps a follower that gossip
// wrongly reports dead while it still fetches. A silent follower that
// comes back rejoins through maybeExpand once its fetch reaches the HW,
// as any follower that catches up.
//
// It also recomputes the HW, which time alone can free: a caught-up
// follower outside the ISR stops holding it back once its lag expires.
func (m *Machine) CheckISR(end LogEnd, now time.Time) (LeaderUpdate, error) {
	if m.role != RoleLeader {
		return LeaderUpdate{HW: m.hw}, ErrNotLeader
	}
	var change *ISRChange
	if m.pending == nil {
		var out []int32
		for _, id := range m.state.ISR {
			if id != m.self && m.outOfSync(id, end, now) {
				out = append(out, id)
			}
		}
		if len(out) > 0 {
			change = m.propose(ISRShrink, out)
		}
	}
	return m.update(end, now, change), nil
}

// outOfSync is CheckISR's test of one ISR follower.
func (m *Machine) outOfSync(id int32, end LogEnd, now time.Time) bool {
	f := m.followers[id]
	lag := m.cfg.ReplicaLagTimeMax
	return f == nil || !f.caughtUp(end.LEO, now, lag) || f.silent(now, lag) || m.silentIneligible(id, f, now) || f.linkGone(now)
}

// linkGone: its last connection closed more than LinkLostGrace ago and
// it has not fetched since.
func (f *follower) linkGone(now time.Time) bool {
	return !f.linkLost.IsZero() && now.Sub(f.linkLost) > LinkLostGrace
}

// LinkLostGrace is how long a follower whose last connection to the
// leader closed has to fetch again before CheckISR takes it out of the
// ISR. A live follower whose connection broke dials again within its
// first retry pause (50 ms); a process that died (killed, crashed, out
// of memory) never does, and its kernel closed its connections at once.
// Waiting for the lag limit or for gossip instead would hold every
// acks=all write of its partitions for seconds.
const LinkLostGrace = 250 * time.Millisecond

// FollowerLinkLost records that follower id has no connection to this
// agent left that carries its fetches, as of now (the wire server says so
// once the last such connection has closed, after its last fetch was
// recorded). A fetch clears it; otherwise CheckISR after LinkLostGrace
// treats the follower as out of sync. Nothing happens unless leading.
// Kafka has no such rule (its controller waits for the broker's session
// to expire); it shortens the pause of acks=all writes when an agent's
// process dies, and costs a live follower that lost its connection for
// longer than the grace no more than a shrink and a rejoin.
func (m *Machine) FollowerLinkLost(id int32, now time.Time) {
	if m.role != RoleLeader {
		return
	}
	if f := m.followers[id]; f != nil {
		f.linkLost = now
	}
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
// A follower gossip calls dead, or whose link is gone, is not waited for
// outside the ISR (Kafka likewise skips fenced brokers).
func (m *Machine) advanceHW(end LogEnd, now time.Time) bool {
	if m.underMinISR() {
		return false
	}
	hw := end.Durable
	for id, f := range m.followers {
		if f.leo < hw && (m.inMaximalISR(id) || m.eligible(id) && !f.linkGone(now) && f.caughtUp(end.LEO, now, m.cfg.ReplicaLagTimeMax)) {
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
