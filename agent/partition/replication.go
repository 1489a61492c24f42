package partition

// A partition's replication (docs/design.md §6): the replica state machine
// decides, the partition does the I/O. Every machine call is made under
// p.mu's write lock (reads of the machine under the read lock); the store
// writes it asks for (ISR changes) run outside the lock, in the ISR writer
// (isrwriter.go). See agent/replica's package comment for the contract.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/replica"
)

func toReplicaState(st metadata.PartitionState) replica.State {
	return replica.State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, Replicas: st.Replicas, ISR: st.ISR, StateEpoch: st.StateEpoch}
}

func toMetadataState(st replica.State) metadata.PartitionState {
	return metadata.PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch, Replicas: st.Replicas, ISR: st.ISR, StateEpoch: st.StateEpoch}
}

func (p *Partition) replicaConfig() replica.Config {
	return replica.Config{ReplicaLagTimeMax: p.cluster.ReplicaLagTimeMax(), MinInsyncReplicas: int(max(p.minISR, 1))}
}

// logEnd is the leader's log position for the machine: with
// log.flush=always the HW may reach only fsynced records.
func (p *Partition) logEnd() replica.LogEnd {
	leo := p.log.LogEndOffset()
	if p.flush == log.FlushAlways {
		return replica.LogEnd{LEO: leo, Durable: min(p.log.FlushedOffset(), leo)}
	}
	return replica.LogEnd{LEO: leo, Durable: leo}
}

// publishLocked makes a machine decision visible: the new HW for readers,
// and a wake-up for acks=all waiters and long polls when the HW moved or
// force is set (a state change). p.mu is write-locked.
func (p *Partition) publishLocked(u replica.LeaderUpdate, force bool) {
	if old := p.hw.Swap(u.HW); old != u.HW || u.Advanced || force {
		p.signalLocked()
	}
	if u.Change != nil && !p.deleted {
		p.writeISR(*u.Change)
	}
}

// signalLocked wakes everyone waiting on this partition.
func (p *Partition) signalLocked() {
	close(p.hwCh)
	p.hwCh = make(chan struct{})
	p.appended.Notify()
	p.notify()
}

// WatchData implements dataplane.PartitionReader: wake is woken at this
// partition's appends, HW moves and state changes until UnwatchData.
func (p *Partition) WatchData(wake chan<- struct{}) { p.appended.Watch(wake) }

// UnwatchData undoes WatchData.
func (p *Partition) UnwatchData(wake chan<- struct{}) { p.appended.Unwatch(wake) }

// ApplyState makes a state read from the store the served one (if it is
// not older than the applied one) and returns whether it changed
// anything. Leaving the leadership waits for appends in flight, so none
// lands after the follower starts lining its log up with the new leader.
func (p *Partition) ApplyState(st metadata.PartitionState, etag string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted {
		return false, nil
	}
	if st.StateEpoch < p.state.StateEpoch || st.StateEpoch == p.state.StateEpoch && p.rep.Role() != replica.RoleNone {
		if st.StateEpoch == p.state.StateEpoch {
			p.etag = etag
		}
		return false, nil
	}
	rs := toReplicaState(st)
	var err error
	if st.Leader == p.agentID {
		var u replica.LeaderUpdate
		if u, err = p.rep.BecomeLeader(rs, p.logEnd(), time.Now()); err == nil {
			p.publishLocked(u, true)
		}
	} else {
		if p.rep.Role() == replica.RoleLeader {
			p.appending.Wait()
		}
		_, err = p.rep.BecomeFollower(rs, p.log)
	}
	if err != nil {
		return false, fmt.Errorf("%s-%d: apply state %+v: %w", p.topic, p.index, st, err)
	}
	p.state, p.etag = st, etag
	p.load.SetRole(st.Leader == p.agentID, time.Now())
	p.hw.Store(p.rep.HighWatermark())
	close(p.changed)
	p.changed = make(chan struct{})
	p.signalLocked()
	return true, nil
}

// StateAndETag is the applied state with its ETag, for a CAS.
func (p *Partition) StateAndETag() (metadata.PartitionState, string) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state, p.etag
}

// confirmISR applies a written ISR change.
func (p *Partition) confirmISR(written metadata.PartitionState, etag string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, err := p.rep.ConfirmISRChange(toReplicaState(written), p.logEnd(), time.Now())
	if err != nil {
		return err
	}
	p.state, p.etag = written, etag
	p.publishLocked(u, true)
	return nil
}

// pendingISR reports whether change is still the one in flight.
func (p *Partition) pendingISR(change replica.ISRChange) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	cur, ok := p.rep.PendingChange()
	return ok && cur.To.StateEpoch == change.To.StateEpoch && cur.Op == change.Op && !p.deleted
}

func (p *Partition) abortISR(change replica.ISRChange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.rep.PendingChange(); ok && cur.To.StateEpoch == change.To.StateEpoch {
		p.rep.AbortISRChange()
	}
}

// CheckISR is the periodic ISR check of a leader.
func (p *Partition) CheckISR(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.deleted || p.rep.Role() != replica.RoleLeader {
		return
	}
	u, err := p.rep.CheckISR(p.logEnd(), now)
	if err == nil {
		p.publishLocked(u, false)
	}
}

// FollowerLinkLost tells a leader that agent id has no connection left to
// this agent carrying its fetches; CheckISR after replica.LinkLostGrace
// takes it out of the ISR unless it fetches again.
func (p *Partition) FollowerLinkLost(id int32, now time.Time) {
	p.mu.Lock()
	p.rep.FollowerLinkLost(id, now)
	p.mu.Unlock()
}

// SetIneligible tells the machine which agents may not join the ISR.
func (p *Partition) SetIneligible(agents []int32) {
	p.mu.Lock()
	p.rep.SetIneligible(agents)
	p.mu.Unlock()
}

// Append writes a checked batch as the leader. acks=all is refused with
// NOT_ENOUGH_REPLICAS before anything is written when the ISR is smaller
// than min.insync.replicas; its wait lasts until the HW passes the batch:
// every replica in the ISR holds it. Every acks level waits for the local
// append's fsync under log.flush=always: answering acks=0/1 earlier would
// save only the client's wait and risk the record. The followers' long
// polls wake as soon as the bytes are written, so that their copies
// overlap the leader's fsync.
func (p *Partition) Append(raw []byte, acks int16) (log.AppendResult, dataplane.AppendWait, error) {
	p.mu.RLock()
	if p.deleted {
		p.mu.RUnlock()
		return log.AppendResult{}, nil, dataplane.ErrUnknownTopicOrPartition
	}
	if err := p.rep.CheckAppend(acks == -1); err != nil {
		p.mu.RUnlock()
		return log.AppendResult{}, nil, err
	}
	epoch := p.rep.LeaderEpoch()
	p.appending.Add(1)
	p.mu.RUnlock()

	res, durable, err := p.log.Write(raw, epoch)
	if err != nil {
		p.appending.Done()
		return log.AppendResult{}, nil, err
	}
	p.load.AddIn(len(raw))
	p.appended.Notify()
	wait := func(ctx context.Context) error {
		err := durable.Wait()
		p.appending.Done()
		if err != nil {
			return err
		}
		p.endMoved()
		if acks != -1 || unsafeAck {
			return nil
		}
		return p.awaitCommit(ctx, epoch, res.LastOffset+1)
	}
	return res, wait, nil
}

// AppendAndWait is Append followed by its wait, for writers that do not
// pipeline (the group coordinator).
func (p *Partition) AppendAndWait(ctx context.Context, raw []byte, acks int16) (log.AppendResult, error) {
	res, wait, err := p.Append(raw, acks)
	if err == nil {
		err = wait(ctx)
	}
	return res, err
}

// endMoved tells the machine that the leader's log moved, and wakes the
// followers' long polls, which read the new records at once.
func (p *Partition) endMoved() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rep.Role() != replica.RoleLeader {
		return
	}
	u, err := p.rep.LeaderEndMoved(p.logEnd(), time.Now())
	if err == nil {
		p.publishLocked(u, false)
	}
	p.appended.Notify()
	p.notify()
}

// awaitCommit waits until the append that ended at end, written in leader
// epoch epoch, is committed or can no longer be.
func (p *Partition) awaitCommit(ctx context.Context, epoch int32, end int64) error {
	for {
		p.mu.RLock()
		ch := p.hwCh
		done, err := p.rep.AppendStatus(epoch, end)
		deleted, moved := p.deleted, p.moved
		p.mu.RUnlock()
		switch {
		case moved:
			return fmt.Errorf("%w: the replica moved to other agents", dataplane.ErrNotLeader)
		case deleted:
			return dataplane.ErrUnknownTopicOrPartition
		case done:
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the ISR to replicate up to offset %d: %w", end, ctx.Err())
		}
	}
}

// ReplicaRead serves a follower's fetch: the epoch and replica checks, a
// read up to the log end (not the HW: followers copy what the leader has),
// then the record of the fetch, which may move the HW and the ISR. A read
// of no bytes (a multi-partition fetch whose byte limit earlier
// partitions used up) records the fetch all the same: the follower asked,
// and an idle or crowded-out follower must not look silent to CheckISR.
func (p *Partition) ReplicaRead(replicaID, leaderEpoch int32, offset int64, maxBytes int, minOne bool) (dataplane.ReplicaReadResult, error) {
	p.mu.RLock()
	err := p.rep.CheckFollowerFetch(replicaID, leaderEpoch, offset, p.log.LogStartOffset())
	deleted := p.deleted
	p.mu.RUnlock()
	out := dataplane.ReplicaReadResult{HighWatermark: p.hw.Load(), LogStartOffset: p.LogStartOffset()}
	switch {
	case deleted:
		return out, dataplane.ErrUnknownTopicOrPartition
	case errors.Is(err, replica.ErrUnknownLeaderEpoch):
		p.cluster.RefreshState(p) // the follower knows a newer state than this agent
		return out, err
	case err != nil:
		return out, err
	}
	end := p.logEnd()
	if offset > end.LEO {
		return out, fmt.Errorf("%w: follower %d fetches %d, log end %d", log.ErrOffsetOutOfRange, replicaID, offset, end.LEO)
	}
	data, err := p.log.Read(offset, maxBytes, end.LEO, minOne)
	if err != nil {
		return out, p.closedErr(err)
	}
	p.load.AddReplicaOut(len(data))
	p.mu.Lock()
	u, err := p.rep.FollowerFetched(replicaID, offset, end, time.Now())
	if err == nil {
		p.publishLocked(u, false)
	}
	p.mu.Unlock()
	out.Records, out.HighWatermark = data, p.hw.Load()
	return out, err
}

// MovedAway marks the partition as closing because its replica moved to
// other agents: appends waiting for the ISR hear NOT_LEADER_OR_FOLLOWER
// (retriable), not that the topic is gone, and hear it now rather than at
// Close: a coordinator's write waits for its acks holding the
// coordinator's lock, which unloading the coordinator takes.
func (p *Partition) MovedAway() {
	p.mu.Lock()
	p.moved = true
	p.signalLocked()
	p.mu.Unlock()
}

// CommittedEpochStart reports whether this leader's HW has reached the
// start of its leader epoch: everything the previous leaders committed is
// then committed here too, and readers that must see all of it (the group
// coordinator's replay) may start.
func (p *Partition) CommittedEpochStart() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.rep.Role() == replica.RoleLeader && p.rep.HighWatermark() >= p.rep.EpochStartOffset()
}
