package replica

import (
	"fmt"
	"slices"
	"time"
)

// ISROp says which way an ISR change goes.
type ISROp int

const (
	ISRExpand ISROp = iota + 1
	ISRShrink
)

func (o ISROp) String() string {
	switch o {
	case ISRExpand:
		return "expand"
	case ISRShrink:
		return "shrink"
	}
	return fmt.Sprintf("ISROp(%d)", int(o))
}

// ISRChange is a proposed ISR change (Kafka's AlterPartition request). The
// leader writes To over From with a CAS of state.json and reports back:
//
//   - written: ConfirmISRChange(To);
//   - the stored state is no longer From (412, or a different state on
//     re-read): apply what is stored with BecomeLeader or BecomeFollower,
//     which drops the proposal (a leader whose epoch is gone steps down);
//   - given up without a write: AbortISRChange;
//   - a store error: retry the same write; the proposal stays in flight.
//
// While it is in flight no other change is proposed, and the HW counts the
// maximal ISR: From's ISR plus a replica being added. Counting an added
// replica early is safe (it only holds the HW back); counting a removed
// one as gone before the write lands is not, so a shrink frees the HW only
// once confirmed.
type ISRChange struct {
	Op       ISROp
	Replicas []int32 // the replica added, or those removed
	From     State   // the committed state the change is based on
	To       State   // From with the new ISR and StateEpoch + 1
}

func (c *ISRChange) clone() *ISRChange {
	out := *c
	out.Replicas = slices.Clone(c.Replicas)
	out.From, out.To = c.From.clone(), c.To.clone()
	return &out
}

// propose records a change as in flight and returns the caller's copy.
func (m *Machine) propose(op ISROp, replicas []int32) *ISRChange {
	to := m.state.clone()
	switch op {
	case ISRExpand:
		to.ISR = append(to.ISR, replicas...)
	case ISRShrink:
		to.ISR = slices.DeleteFunc(to.ISR, func(id int32) bool { return slices.Contains(replicas, id) })
	}
	to.StateEpoch++
	m.pending = &ISRChange{Op: op, Replicas: slices.Clone(replicas), From: m.state.clone(), To: to}
	return m.pending.clone()
}

// maybeExpand is Kafka's rule for adding a follower to the ISR: its fetch
// offset has reached the HW, and the start of this leader epoch: a
// follower that has not fetched anything of this epoch may still miss
// committed records between the old HW and the epoch start, and would
// lose them if elected. (Kafka deliberately does not also require the
// lag check here, to match how followers judge themselves in sync.)
func (m *Machine) maybeExpand(id int32, f *follower) *ISRChange {
	if m.pending != nil || slices.Contains(m.state.ISR, id) || !m.eligible(id) {
		return nil
	}
	if f.leo < m.hw || m.epochStart < 0 || f.leo < m.epochStart {
		return nil
	}
	return m.propose(ISRExpand, []int32{id})
}

// ConfirmISRChange applies the state a proposal wrote (as written: its
// StateEpoch is newer than the committed one). The HW may advance: a
// shrink no longer waits for the removed followers.
func (m *Machine) ConfirmISRChange(written State, end LogEnd, now time.Time) (LeaderUpdate, error) {
	if m.role != RoleLeader {
		return LeaderUpdate{HW: m.hw}, ErrNotLeader
	}
	if m.pending == nil {
		return LeaderUpdate{HW: m.hw}, ErrNoPendingChange
	}
	if written.Leader != m.self || written.LeaderEpoch != m.state.LeaderEpoch || written.StateEpoch <= m.state.StateEpoch {
		return LeaderUpdate{HW: m.hw}, fmt.Errorf("%w: written leader %d epoch %d state epoch %d; applied leader %d epoch %d state epoch %d",
			ErrNoPendingChange, written.Leader, written.LeaderEpoch, written.StateEpoch, m.self, m.state.LeaderEpoch, m.state.StateEpoch)
	}
	return m.BecomeLeader(written, end, now)
}

// AbortISRChange forgets the change in flight, back to the committed
// state, when the caller knows it was not written and will not retry it.
// A later fetch or check proposes again if still needed.
func (m *Machine) AbortISRChange() { m.pending = nil }

// PendingChange is the ISR change in flight, if any.
func (m *Machine) PendingChange() (ISRChange, bool) {
	if m.pending == nil {
		return ISRChange{}, false
	}
	return *m.pending.clone(), true
}

// ISR is the committed ISR.
func (m *Machine) ISR() []int32 { return slices.Clone(m.state.ISR) }

// MaximalISR is the committed ISR plus a replica being added; the HW and
// acks=all count it.
func (m *Machine) MaximalISR() []int32 {
	isr := slices.Clone(m.state.ISR)
	if m.pending != nil && m.pending.Op == ISRExpand {
		isr = append(isr, m.pending.Replicas...)
	}
	return isr
}

func (m *Machine) inMaximalISR(id int32) bool {
	return slices.Contains(m.state.ISR, id) || m.pending != nil && m.pending.Op == ISRExpand && slices.Contains(m.pending.Replicas, id)
}

// effectiveMinISR is min.insync.replicas capped by the replication
// factor, as Kafka: a topic with min.insync.replicas=2 and one replica
// still takes acks=all writes.
func (m *Machine) effectiveMinISR() int {
	return min(m.cfg.MinInsyncReplicas, len(m.state.Replicas))
}

// UnderMinISR: leading with a committed ISR below min.insync.replicas; the
// HW is frozen and acks=all appends are refused.
func (m *Machine) UnderMinISR() bool { return m.underMinISR() }

func (m *Machine) underMinISR() bool {
	return m.role == RoleLeader && len(m.state.ISR) < m.effectiveMinISR()
}
