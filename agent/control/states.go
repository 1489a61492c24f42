package control

// The replication loop and the partition states it re-reads (docs/design.md §6,
// §8): a writer of a state broadcasts "state of partition X changed", the
// receivers queue a re-read, and the loop re-reads the queued states (all
// of them every --reconcile-interval), applies them, elects leaders,
// completes moves and runs the leaders' ISR checks.

import (
	"context"
	"errors"
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
			if t.Resolved.Diskless {
				continue // no partition states
			}
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

// onStateBroadcast queues a re-read of an announced partition state.
func (c *Controller) onStateBroadcast(e membership.Event) bool {
	k, ok := parseStateBroadcastKey(e.Key)
	if ok {
		c.refresh.add(k)
	}
	return ok
}
