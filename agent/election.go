package agent

// Partition states across agents (DESIGN.md §6 "Election", §8): state.json
// is changed only by CAS. The writer broadcasts "state of partition X
// changed"; receivers re-read it, and every --reconcile-interval all states
// are re-read anyway. Each agent runs one replication loop that applies
// re-read states, elects leaders for partitions whose leader is gone, and
// runs the leaders' ISR checks.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/replica"
	"github.com/strata-streaming/strata/membership"
)

// statePrefix starts the broadcast key of one partition's state.
const statePrefix = "state/"

// electionGrace is how long a starting agent waits before it counts an
// agent it has not heard of as dead: gossip needs a moment to list the
// others, and electing early would take leaderships from live agents.
const electionGrace = 5 * time.Second

type partitionKey struct {
	topicID [16]byte
	index   int32
}

func stateBroadcastKey(k partitionKey) string {
	return statePrefix + metadata.FormatTopicID(k.topicID) + "/" + strconv.Itoa(int(k.index))
}

func parseStateBroadcastKey(key string) (partitionKey, bool) {
	rest, ok := strings.CutPrefix(key, statePrefix)
	if !ok {
		return partitionKey{}, false
	}
	idStr, idxStr, ok := strings.Cut(rest, "/")
	id, err := metadata.ParseTopicID(idStr)
	idx, err2 := strconv.ParseInt(idxStr, 10, 32)
	if !ok || err != nil || err2 != nil || idx < 0 {
		return partitionKey{}, false
	}
	return partitionKey{id, int32(idx)}, true
}

// stateRefresh is the set of partitions whose state should be re-read.
type stateRefresh struct {
	mu   sync.Mutex
	keys map[partitionKey]bool
	wake chan struct{}
}

func (r *stateRefresh) add(k partitionKey) {
	r.mu.Lock()
	if r.keys == nil {
		r.keys = map[partitionKey]bool{}
	}
	r.keys[k] = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *stateRefresh) take() []partitionKey {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]partitionKey, 0, len(r.keys))
	for k := range r.keys {
		out = append(out, k)
	}
	clear(r.keys)
	return out
}

// The clusterOps methods.

func (a *Agent) replicaLagTimeMax() time.Duration { return a.cfg.ReplicaLagTimeMax }

func (a *Agent) refreshState(p *partition) {
	a.refresh.add(partitionKey{p.topicID, p.index})
}

// announceState tells the other agents that a partition's state changed.
func (a *Agent) announceState(k partitionKey, stateEpoch int32) {
	if a.members == nil {
		return
	}
	if err := a.members.Broadcast(stateBroadcastKey(k), []byte(strconv.Itoa(int(stateEpoch)))); err != nil {
		a.logger.Warn("announce partition state", "err", err)
	}
}

// writeISR writes an ISR change proposed by p's machine, retrying store
// errors until it lands, loses the CAS or is superseded.
func (a *Agent) writeISR(p *partition, change replica.ISRChange) {
	p.fetching.Add(1)
	go func() {
		defer p.fetching.Done()
		backoff := 50 * time.Millisecond
		for p.pendingISR(change) {
			err := a.tryWriteISR(p, change)
			if err == nil {
				return
			}
			a.logger.Warn("ISR change not written; retrying", "topic", p.topic, "partition", p.index, "op", change.Op, "replicas", change.Replicas, "err", err)
			select {
			case <-p.stopped:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}()
}

func (a *Agent) tryWriteISR(p *partition, change replica.ISRChange) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, etag := p.stateAndETag()
	if st.StateEpoch != change.From.StateEpoch {
		p.abortISR(change) // the state moved on under it
		return nil
	}
	next := toMetadataState(change.To)
	// An ISR change keeps what the replica machine does not track: a
	// reassignment in progress (its Adding too, or a cancel would keep the
	// new replicas and the balancer would undercount moves in flight) and
	// the replication factor.
	next.Target, next.Adding, next.ReplicationFactor = st.Target, st.Adding, st.ReplicationFactor
	newETag, err := a.store.CASPartitionState(ctx, p.topicID, p.index, next, etag)
	if errors.Is(err, metadata.ErrConflict) {
		// Replaced: re-read and apply, which drops the proposal; a leader
		// whose epoch is gone steps down here.
		a.casLost.Inc()
		a.logger.Warn("ISR change lost the CAS; re-reading the partition state", "topic", p.topic, "partition", p.index, "op", change.Op)
		return a.reloadState(ctx, p)
	}
	if err != nil {
		return err
	}
	if err := p.confirmISR(next, newETag); err != nil {
		return a.reloadState(ctx, p)
	}
	a.isrChanges.WithLabelValues(change.Op.String()).Inc()
	a.logger.Info("ISR changed", "topic", p.topic, "partition", p.index, "op", change.Op, "replicas", change.Replicas, "isr", change.To.ISR, "leader_epoch", change.To.LeaderEpoch)
	a.announceState(partitionKey{p.topicID, p.index}, change.To.StateEpoch)
	return nil
}

// reloadState re-reads p's state and applies it. A state that no longer
// lists this agent is left to the replication loop: dropping the replica
// closes p, which waits for p's fetcher and ISR writers, and this may be
// one of them.
func (a *Agent) reloadState(ctx context.Context, p *partition) error {
	st, etag, err := a.store.PartitionState(ctx, p.topicID, p.index)
	if err != nil {
		return err
	}
	if !slices.Contains(st.Replicas, a.id) {
		a.refreshState(p)
		return nil
	}
	a.applyState(p, st, etag)
	return nil
}

// applyState applies a state read from the store to a local partition and
// logs leadership changes.
func (a *Agent) applyState(p *partition, st metadata.PartitionState, etag string) {
	before, _ := p.stateAndETag()
	changed, err := p.applyState(st, etag)
	if err != nil {
		a.logger.Warn("partition state not applied", "topic", p.topic, "partition", p.index, "err", err)
		return
	}
	if changed && p.topic == offsetsTopic && before.Leader == a.id && st.Leader != a.id {
		a.unloadCoordinator(p.index)
	}
	if changed && (before.Leader != st.Leader || before.LeaderEpoch != st.LeaderEpoch) {
		a.logger.Info("partition leadership", "topic", p.topic, "partition", p.index, "leader", st.Leader,
			"leader_epoch", st.LeaderEpoch, "isr", st.ISR, "role", roleOf(st, a.id))
	}
}

func roleOf(st metadata.PartitionState, self int32) string {
	if st.Leader == self {
		return "leader"
	}
	return "follower"
}

// replicationLoop applies announced states, re-reads all states every
// reconcile interval, elects leaders and runs ISR checks.
func (a *Agent) replicationLoop() {
	tick := time.NewTicker(a.replicationTick())
	defer tick.Stop()
	full := time.NewTicker(a.cfg.ReconcileInterval)
	defer full.Stop()
	for {
		all := false
		select {
		case <-a.stop:
			return
		case <-tick.C:
		case <-full.C:
			all = true
		case <-a.refresh.wake:
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ReconcileInterval)
		a.refreshStates(ctx, all)
		a.electLeaders(ctx)
		a.completeMoves(ctx)
		cancel()
		now := time.Now()
		for _, p := range a.localPartitions() {
			p.checkISR(now)
		}
	}
}

// replicationTick is half the lag limit (Kafka's ISR check period),
// at most a second so that elections follow failures quickly.
func (a *Agent) replicationTick() time.Duration {
	return max(min(a.cfg.ReplicaLagTimeMax/2, time.Second), 10*time.Millisecond)
}

// refreshStates re-reads the queued partitions' states, or all of them.
func (a *Agent) refreshStates(ctx context.Context, all bool) {
	keys := a.refresh.take()
	if all {
		keys = keys[:0]
		for _, e := range a.topicEntries() {
			for i := range e.meta.Partitions {
				keys = append(keys, partitionKey{e.meta.ID, i})
			}
		}
	}
	for _, k := range keys {
		if ctx.Err() != nil {
			a.refresh.add(k) // try again next round
			continue
		}
		local, peer := a.partitionByKey(k)
		if local == nil && peer == nil {
			continue
		}
		st, etag, err := a.store.PartitionState(ctx, k.topicID, k.index)
		if err != nil {
			if !errors.Is(err, metadata.ErrUnknownPartition) {
				a.logger.Warn("re-read partition state", "topic_id", metadata.FormatTopicID(k.topicID), "partition", k.index, "err", err)
			}
			continue
		}
		a.applyStored(k, st, etag)
	}
}

// partitionByKey finds a served partition.
func (a *Agent) partitionByKey(k partitionKey) (*partition, *peerPartition) {
	a.mu.RLock()
	e, ok := a.byID[k.topicID]
	a.mu.RUnlock()
	if !ok {
		return nil, nil
	}
	for _, p := range e.parts {
		if p.index == k.index {
			return p, nil
		}
	}
	for _, p := range e.peers {
		if p.index == k.index {
			return nil, p
		}
	}
	return nil, nil
}

// liveAgents is this agent and every agent gossip lists; during the grace
// period after start, nil (every agent counts as alive).
func (a *Agent) liveAgents() map[int32]bool {
	if a.members == nil || time.Since(a.startedAt) < electionGrace {
		return nil
	}
	live := map[int32]bool{a.id: true}
	for _, m := range a.members.Members() {
		live[m.ID] = true
	}
	return live
}

// electLeaders takes over every local partition whose leader is dead (or
// that has none) when this agent is the first live ISR member in replica
// order; the CAS makes sure only one agent wins.
func (a *Agent) electLeaders(ctx context.Context) {
	live := a.liveAgents()
	if live == nil {
		return
	}
	var ineligible []int32
	for _, e := range a.topicEntries() {
		for _, p := range e.parts {
			st, etag := p.stateAndETag()
			for _, r := range st.Replicas {
				if !live[r] && !slices.Contains(ineligible, r) {
					ineligible = append(ineligible, r)
				}
			}
			if st.Leader == a.id || st.Leader >= 0 && live[st.Leader] {
				continue
			}
			next, ok := electionResult(st, a.id, live, e.snap.Resolved.UncleanLeaderElection)
			if !ok {
				continue
			}
			if err := a.takeOver(ctx, p, st, next, etag, "leader "+strconv.Itoa(int(st.Leader))+" is not alive"); err != nil {
				a.logger.Warn("leader election", "topic", p.topic, "partition", p.index, "err", err)
			}
		}
	}
	for _, p := range a.localPartitions() {
		p.setIneligible(ineligible)
	}
}

// electionResult is the state in which self leads after st's leader died,
// and whether self is the one to lead: the first live ISR member in
// replica order; with unclean election, else the first live replica. The
// ISR keeps its live members.
func electionResult(st metadata.PartitionState, self int32, live map[int32]bool, unclean bool) (metadata.PartitionState, bool) {
	leader := int32(-1)
	for _, r := range st.Replicas {
		if slices.Contains(st.ISR, r) && live[r] {
			leader = r
			break
		}
	}
	isr := slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return !live[r] })
	if leader < 0 && unclean {
		for _, r := range st.Replicas {
			if live[r] {
				leader, isr = r, []int32{r}
				break
			}
		}
	}
	if leader != self {
		return metadata.PartitionState{}, false
	}
	next := st
	next.Leader, next.LeaderEpoch, next.StateEpoch = self, st.LeaderEpoch+1, st.StateEpoch+1
	next.Replicas, next.ISR = slices.Clone(st.Replicas), isr
	return next, true
}

// takeOver writes next (this agent leading in a new epoch) over st with a
// CAS and applies the outcome: the new state when it won, the stored one
// when another agent changed it first.
func (a *Agent) takeOver(ctx context.Context, p *partition, st, next metadata.PartitionState, etag, why string) error {
	newETag, err := a.store.CASPartitionState(ctx, p.topicID, p.index, next, etag)
	if errors.Is(err, metadata.ErrConflict) {
		return a.reloadState(ctx, p)
	}
	if err != nil {
		return fmt.Errorf("take over %s-%d: %w", p.topic, p.index, err)
	}
	a.logger.Info("took over partition leadership", "topic", p.topic, "partition", p.index, "leader_epoch", next.LeaderEpoch,
		"previous_leader", st.Leader, "isr", next.ISR, "why", why)
	a.elections.Inc()
	a.applyState(p, next, newETag)
	a.announceState(partitionKey{p.topicID, p.index}, next.StateEpoch)
	return nil
}

// leaveISRLostDisk is the start of an agent that lost its copy of p (its
// directory is gone: a wiped or replaced disk) while the store still lists
// it in the ISR beside others. Its log is empty, or restored to the
// bucket's end, so it must neither lead (the records acknowledged above
// the bucket would be truncated from every follower) nor count as in
// sync: it leaves the ISR, handing leadership, if it held it, to the
// first other ISR member in replica order in a new epoch. Every ISR member
// holds every acknowledged record. If that agent is down too, the usual
// election moves on from there; this one rejoins the ISR once it has
// copied the partition again, as any follower does.
func (a *Agent) leaveISRLostDisk(ctx context.Context, p *partition, st metadata.PartitionState, etag string) error {
	for attempt := 0; ; attempt++ {
		next := st
		next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return r == a.id })
		next.StateEpoch = st.StateEpoch + 1
		if st.Leader == a.id {
			i := slices.IndexFunc(st.Replicas, func(r int32) bool { return slices.Contains(next.ISR, r) })
			next.Leader, next.LeaderEpoch = st.Replicas[i], st.LeaderEpoch+1
		}
		newETag, err := a.store.CASPartitionState(ctx, p.topicID, p.index, next, etag)
		if errors.Is(err, metadata.ErrConflict) && attempt < 5 {
			if st, etag, err = a.store.PartitionState(ctx, p.topicID, p.index); err != nil {
				return fmt.Errorf("lost disk: re-read %s-%d: %w", p.topic, p.index, err)
			}
			if !slices.Contains(st.ISR, a.id) || len(st.ISR) == 1 {
				p.state = metadata.PartitionState{Leader: -1, LeaderEpoch: -1, StateEpoch: -1}
				a.applyState(p, st, etag)
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("lost disk: leave the ISR of %s-%d: %w", p.topic, p.index, err)
		}
		a.logger.Warn("this agent's copy of the partition is gone (its directory is missing): it leaves the ISR until it has copied the partition again",
			"topic", p.topic, "partition", p.index, "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR)
		a.isrChanges.WithLabelValues("shrink").Inc()
		p.state = metadata.PartitionState{Leader: -1, LeaderEpoch: -1, StateEpoch: -1}
		a.applyState(p, next, newETag)
		a.announceState(partitionKey{p.topicID, p.index}, next.StateEpoch)
		return nil
	}
}

// onStateBroadcast queues a re-read of an announced partition state.
func (a *Agent) onStateBroadcast(e membership.Event) bool {
	k, ok := parseStateBroadcastKey(e.Key)
	if ok {
		a.refresh.add(k)
	}
	return ok
}
