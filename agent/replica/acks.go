package replica

import "fmt"

// CheckAppend decides whether a produce may be appended now: only on the
// leader, and with acks=all only while the committed ISR has at least
// min.insync.replicas members (Kafka counts the committed ISR here, not
// the maximal one). Call it under the same lock as LeaderEpoch, and tag
// the append with that epoch.
func (m *Machine) CheckAppend(acksAll bool) error {
	if m.role != RoleLeader {
		return fmt.Errorf("%w: leader is %d", ErrNotLeader, m.state.Leader)
	}
	if acksAll && len(m.state.ISR) < m.effectiveMinISR() {
		return fmt.Errorf("%w: ISR %v, min.insync.replicas %d", ErrNotEnoughReplicas, m.state.ISR, m.effectiveMinISR())
	}
	return nil
}

// AppendStatus judges an acks=all append written under leader epoch
// epoch that ended at end (its last offset + 1). Until done it keeps
// waiting; call again after each HW advance and each ISR or leadership
// change. Once done, err is nil (committed: the HW passed it with enough
// replicas in sync), ErrNotEnoughReplicasAfterAppend, or ErrNotLeader.
//
// As Kafka, an append the HW has passed still fails if the maximal ISR is
// below min.insync.replicas by then. Kafka 4 never advances the HW in
// that state and lets the request time out; here an append the HW has not
// passed fails at once when the committed ISR is below the minimum and no
// change in flight would restore it, since only an ISR expansion could
// commit it. The client retries either way; this answers sooner.
//
// A leader epoch other than epoch means this replica lost the leadership
// (even if it won it back later, its log may have been truncated and
// overwritten since), so the append is ErrNotLeader: never acknowledged.
func (m *Machine) AppendStatus(epoch int32, end int64) (done bool, err error) {
	if m.role != RoleLeader || m.state.LeaderEpoch != epoch {
		return true, fmt.Errorf("%w: appended in leader epoch %d, now %s in epoch %d", ErrNotLeader, epoch, m.role, m.state.LeaderEpoch)
	}
	minISR := m.effectiveMinISR()
	if m.hw >= end {
		if n := len(m.MaximalISR()); n < minISR {
			return true, fmt.Errorf("%w: ISR %v, min.insync.replicas %d", ErrNotEnoughReplicasAfterAppend, m.MaximalISR(), minISR)
		}
		return true, nil
	}
	if len(m.state.ISR) < minISR && (m.pending == nil || len(m.pending.To.ISR) < minISR) {
		return true, fmt.Errorf("%w: ISR %v, min.insync.replicas %d, HW %d below %d", ErrNotEnoughReplicasAfterAppend, m.state.ISR, minISR, m.hw, end)
	}
	return false, nil
}
