package control

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
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/membership"
)

// statePrefix starts the broadcast key of one partition's state.
const statePrefix = "state/"

// electionGrace is how long a starting agent waits before it counts an
// agent it has not heard of as dead: gossip needs a moment to list the
// others, and electing early would take leaderships from live agents.
const electionGrace = 5 * time.Second

func stateBroadcastKey(k Key) string {
	return statePrefix + metadata.FormatTopicID(k.TopicID) + "/" + strconv.Itoa(int(k.Index))
}

func parseStateBroadcastKey(key string) (Key, bool) {
	rest, ok := strings.CutPrefix(key, statePrefix)
	if !ok {
		return Key{}, false
	}
	idStr, idxStr, ok := strings.Cut(rest, "/")
	id, err := metadata.ParseTopicID(idStr)
	idx, err2 := strconv.ParseInt(idxStr, 10, 32)
	if !ok || err != nil || err2 != nil || idx < 0 {
		return Key{}, false
	}
	return Key{id, int32(idx)}, true
}

// stateRefresh is the set of partitions whose state should be re-read.
type stateRefresh struct {
	mu   sync.Mutex
	keys map[Key]bool
	wake chan struct{}
}

func (r *stateRefresh) add(k Key) {
	r.mu.Lock()
	if r.keys == nil {
		r.keys = map[Key]bool{}
	}
	r.keys[k] = true
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// wakeUp wakes the replication loop without queueing a partition.
func (r *stateRefresh) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *stateRefresh) take() []Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Key, 0, len(r.keys))
	for k := range r.keys {
		out = append(out, k)
	}
	clear(r.keys)
	return out
}

func (c *Controller) refreshState(p *partition.Partition) {
	c.refresh.add(Key{p.TopicID(), p.Index()})
}

// announceState tells the other agents that a partition's state changed.
func (c *Controller) announceState(k Key, stateEpoch int32) {
	if c.members == nil {
		return
	}
	if err := c.members.Broadcast(stateBroadcastKey(k), []byte(strconv.Itoa(int(stateEpoch)))); err != nil {
		c.logger.Warn("announce partition state", "err", err)
	}
}

// reloadState re-reads p's state and applies it. A state that no longer
// lists this agent is left to the replication loop: dropping the replica
// closes p, which waits for p's fetcher and ISR writers, and this may be
// one of them.
func (c *Controller) reloadState(ctx context.Context, p *partition.Partition) error {
	st, etag, err := c.store.PartitionState(ctx, p.TopicID(), p.Index())
	if err != nil {
		return err
	}
	if !slices.Contains(st.Replicas, c.id) {
		c.refreshState(p)
		return nil
	}
	c.ApplyState(p, st, etag)
	return nil
}

// ApplyState applies a state read from the store to a local partition and
// logs leadership changes.
func (c *Controller) ApplyState(p *partition.Partition, st metadata.PartitionState, etag string) {
	before, _ := p.StateAndETag()
	changed, err := p.ApplyState(st, etag)
	if err != nil {
		c.logger.Warn("partition state not applied", "topic", p.Topic(), "partition", p.Index(), "err", err)
		return
	}
	if changed && before.Leader == c.id && st.Leader != c.id {
		c.host.LeaderMovedAway(p)
	}
	if changed && (before.Leader != st.Leader || before.LeaderEpoch != st.LeaderEpoch) {
		c.logger.Info("partition leadership", "topic", p.Topic(), "partition", p.Index(), "leader", st.Leader,
			"leader_epoch", st.LeaderEpoch, "isr", st.ISR, "role", roleOf(st, c.id))
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
func (c *Controller) replicationLoop(stop context.Context) {
	tick := time.NewTicker(c.replicationTick())
	defer tick.Stop()
	full := time.NewTicker(c.cfg.ReconcileInterval)
	defer full.Stop()
	for {
		all := false
		select {
		case <-stop.Done():
			return
		case <-tick.C:
		case <-full.C:
			all = true
		case <-c.refresh.wake:
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReconcileInterval)
		c.RefreshStates(ctx, all)
		now := time.Now()
		c.electLeaders(ctx, now)
		c.completeMoves(ctx, now)
		cancel()
		now = time.Now()
		for _, p := range c.host.Partitions() {
			p.CheckISR(now)
		}
	}
}

// replicationTick is half the lag limit (Kafka's ISR check period),
// at most a second so that elections follow failures quickly.
func (c *Controller) replicationTick() time.Duration {
	return max(min(c.cfg.ReplicaLagTimeMax/2, time.Second), 10*time.Millisecond)
}

// RefreshStates re-reads the queued partitions' states, or all of them.
func (c *Controller) RefreshStates(ctx context.Context, all bool) {
	keys := c.refresh.take()
	if all {
		keys = keys[:0]
		for _, t := range c.host.Topics() {
			for i := range t.PartitionCount {
				keys = append(keys, Key{t.ID, i})
			}
		}
	}
	for _, k := range keys {
		if ctx.Err() != nil {
			c.refresh.add(k) // try again next round
			continue
		}
		local, peer := c.host.Lookup(k)
		if local == nil && peer == nil {
			continue
		}
		st, etag, err := c.store.PartitionState(ctx, k.TopicID, k.Index)
		if err != nil {
			if !errors.Is(err, metadata.ErrUnknownPartition) {
				c.logger.Warn("re-read partition state", "topic_id", metadata.FormatTopicID(k.TopicID), "partition", k.Index, "err", err)
			}
			continue
		}
		c.applyStored(k, st, etag)
	}
}

// liveAgents is this agent and every agent gossip lists; during the grace
// period after start, nil (every agent counts as alive).
func (c *Controller) liveAgents(now time.Time) map[int32]bool {
	if c.members == nil || now.Sub(c.startedAt) < electionGrace {
		return nil
	}
	live := map[int32]bool{c.id: true}
	for _, m := range c.members.Members() {
		live[m.ID] = true
	}
	return live
}

// electLeaders takes over every local partition whose leader is dead (or
// that has none) when this agent is the first live ISR member in replica
// order; the CAS makes sure only one agent wins.
func (c *Controller) electLeaders(ctx context.Context, now time.Time) {
	live := c.liveAgents(now)
	if live == nil {
		return
	}
	var ineligible []int32
	for _, t := range c.host.Topics() {
		for _, kp := range t.Partitions {
			p, ok := kp.(*partition.Partition)
			if !ok {
				continue
			}
			st, etag := p.StateAndETag()
			for _, r := range st.Replicas {
				if !live[r] && !slices.Contains(ineligible, r) {
					ineligible = append(ineligible, r)
				}
			}
			if st.Leader == c.id || st.Leader >= 0 && live[st.Leader] {
				continue
			}
			next, ok := electionResult(st, c.id, live, t.Resolved.UncleanLeaderElection)
			if !ok {
				continue
			}
			if err := c.TakeOver(ctx, p, st, next, etag, "leader "+strconv.Itoa(int(st.Leader))+" is not alive"); err != nil {
				c.logger.Warn("leader election", "topic", p.Topic(), "partition", p.Index(), "err", err)
			}
		}
	}
	for _, p := range c.host.Partitions() {
		p.SetIneligible(ineligible)
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

// TakeOver writes next (this agent leading in a new epoch) over st with a
// CAS and applies the outcome: the new state when it won, the stored one
// when another agent changed it first.
func (c *Controller) TakeOver(ctx context.Context, p *partition.Partition, st, next metadata.PartitionState, etag, why string) error {
	newETag, err := c.store.CASPartitionState(ctx, p.TopicID(), p.Index(), next, etag)
	if errors.Is(err, metadata.ErrConflict) {
		return c.reloadState(ctx, p)
	}
	if err != nil {
		return fmt.Errorf("take over %s-%d: %w", p.Topic(), p.Index(), err)
	}
	c.logger.Info("took over partition leadership", "topic", p.Topic(), "partition", p.Index(), "leader_epoch", next.LeaderEpoch,
		"previous_leader", st.Leader, "isr", next.ISR, "why", why)
	c.metrics.elections.Inc()
	c.ApplyState(p, next, newETag)
	c.announceState(Key{p.TopicID(), p.Index()}, next.StateEpoch)
	return nil
}

// LeaveISRLostDisk is the start of an agent that lost its copy of p (its
// directory is gone: a wiped or replaced disk) while the store still lists
// it in the ISR beside others. Its log is empty, or restored to the
// bucket's end, so it must neither lead (the records acknowledged above
// the bucket would be truncated from every follower) nor count as in
// sync: it leaves the ISR, handing leadership, if it held it, to the
// first other ISR member in replica order in a new epoch. Every ISR member
// holds every acknowledged record. If that agent is down too, the usual
// election moves on from there; this one rejoins the ISR once it has
// copied the partition again, as any follower does.
func (c *Controller) LeaveISRLostDisk(ctx context.Context, p *partition.Partition, st metadata.PartitionState, etag string) error {
	for attempt := 0; ; attempt++ {
		next := st
		next.ISR = slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return r == c.id })
		next.StateEpoch = st.StateEpoch + 1
		if st.Leader == c.id {
			i := slices.IndexFunc(st.Replicas, func(r int32) bool { return slices.Contains(next.ISR, r) })
			next.Leader, next.LeaderEpoch = st.Replicas[i], st.LeaderEpoch+1
		}
		newETag, err := c.store.CASPartitionState(ctx, p.TopicID(), p.Index(), next, etag)
		if errors.Is(err, metadata.ErrConflict) && attempt < 5 {
			if st, etag, err = c.store.PartitionState(ctx, p.TopicID(), p.Index()); err != nil {
				return fmt.Errorf("lost disk: re-read %s-%d: %w", p.Topic(), p.Index(), err)
			}
			if !slices.Contains(st.ISR, c.id) || len(st.ISR) == 1 {
				c.ApplyState(p, st, etag)
				return nil
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("lost disk: leave the ISR of %s-%d: %w", p.Topic(), p.Index(), err)
		}
		c.logger.Warn("this agent's copy of the partition is gone (its directory is missing): it leaves the ISR until it has copied the partition again",
			"topic", p.Topic(), "partition", p.Index(), "leader", next.Leader, "leader_epoch", next.LeaderEpoch, "isr", next.ISR)
		c.partMetrics.ISRChanged("shrink")
		c.ApplyState(p, next, newETag)
		c.announceState(Key{p.TopicID(), p.Index()}, next.StateEpoch)
		return nil
	}
}

// onStateBroadcast queues a re-read of an announced partition state.
func (c *Controller) onStateBroadcast(e membership.Event) bool {
	k, ok := parseStateBroadcastKey(e.Key)
	if ok {
		c.refresh.add(k)
	}
	return ok
}
