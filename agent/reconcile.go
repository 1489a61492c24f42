package agent

// Topics changed by other agents (docs/design.md §8: gossip is a hint, the
// store is the truth). An agent that creates, deletes or changes a topic
// broadcasts "topics changed"; every agent then re-reads the topics from
// the store, and does so anyway every --reconcile-interval, which repairs
// any broadcast gossip lost. A topic new to this agent gets its local
// replicas opened and its other partitions shown as peers; a topic gone
// from the store is closed and its local data removed.

import (
	"context"
	"maps"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/membership"
)

// topicsKey is the broadcast key of topic changes; a newer broadcast
// replaces a queued one, since receivers re-read everything anyway.
const topicsKey = "topics"

// announceTopics tells the other agents that topics changed.
func (a *Agent) announceTopics() {
	if a.members == nil {
		return
	}
	if err := a.members.Broadcast(topicsKey, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		a.logger.Warn("announce topic change", "err", err)
	}
}

// reconcileLoop re-reads the topics, the ACLs (agent/acl) and the client
// quotas (agent/quota) every interval and when woken.
func (a *Agent) reconcileLoop() {
	t := time.NewTicker(a.cfg.ReconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		case <-a.reconcileNow:
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ReconcileInterval)
		if err := a.reconcileTopics(ctx); err != nil {
			a.logger.Warn("reconcile topics with the store", "err", err)
		}
		if err := a.acls.Refresh(ctx); err != nil {
			a.logger.Warn("re-read ACLs from the store", "err", err)
		}
		if err := a.quotas.Refresh(ctx); err != nil {
			a.logger.Warn("re-read client quotas from the store", "err", err)
		}
		cancel()
	}
}

// wakeReconcile asks for a reconcile soon; wakes coalesce.
func (a *Agent) wakeReconcile() {
	select {
	case a.reconcileNow <- struct{}{}:
	default:
	}
}

// onMemberEvent reacts to gossip beyond logging.
func (a *Agent) onMemberEvent(e membership.Event) {
	switch {
	case e.Type == membership.EventBroadcast && (e.Key == topicsKey || e.Key == aclsKey || e.Key == quotasKey):
		a.wakeReconcile()
	case e.Type == membership.EventBroadcast:
		a.ctl.OnBroadcast(e)
	case e.Type == membership.EventFail, e.Type == membership.EventLeave:
		// Its pooled connections are dead or about to be; a return
		// dials afresh.
		a.peers.Forget(e.Member.ID)
		a.ctl.MemberChanged(time.Now())
	case e.Type == membership.EventJoin, e.Type == membership.EventUpdate:
		a.ctl.MemberChanged(time.Now())
	}
}

// reconcileTopics brings the served topics in line with the store.
func (a *Agent) reconcileTopics(ctx context.Context) error {
	// Listed under adminMu, so that a topic this agent creates or deletes
	// meanwhile is not mistaken for another agent's change.
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	stored, err := a.store.Topics(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, t := range stored {
		seen[t.Name] = true
		e, ok := a.entry(t.Name)
		if ok && e.meta.ID != t.ID {
			a.dropTopicLocked(e, "re-created by another agent")
			ok = false
		}
		r, err := metadata.Resolve(t.Configs, a.cfg.TopicDefaults)
		if err != nil {
			a.logger.Warn("reconcile: topic configs", "topic", t.Name, "err", err)
			continue
		}
		switch {
		case !ok:
			if err := a.adoptTopicLocked(ctx, t.Name); err != nil {
				a.logger.Warn("reconcile: open topic", "topic", t.Name, "err", err)
				continue
			}
		case t.Partitions > e.meta.Partitions:
			parts, peers, err := a.openPartitions(ctx, t, r, e.meta.Partitions, false)
			if err != nil {
				a.logger.Warn("reconcile: open new partitions", "topic", t.Name, "err", err)
				continue
			}
			a.putTopic(newTopicEntry(t, r, append(e.parts, parts...), append(e.peers, peers...)))
		case !maps.Equal(t.Configs, e.meta.Configs):
			if err := a.applyTopicLocked(ctx, e, t, r); err != nil {
				a.logger.Warn("reconcile: apply topic configs", "topic", t.Name, "err", err)
			}
		}
	}
	for _, e := range a.topicEntries() {
		if seen[e.meta.Name] {
			continue
		}
		// Listing skips topics this agent cannot read (a newer version's):
		// only a topic whose id is gone from the store is deleted.
		if exists, err := a.store.TopicIDExists(ctx, e.meta.ID); err != nil || exists {
			continue
		}
		a.dropTopicLocked(e, "deleted by another agent")
	}
	return nil
}

// adoptTopicLocked starts serving a topic found in the store. a.adminMu
// is held.
func (a *Agent) adoptTopicLocked(ctx context.Context, name string) error {
	t, err := a.store.Topic(ctx, name)
	if err != nil {
		return err
	}
	r, err := metadata.Resolve(t.Configs, a.cfg.TopicDefaults)
	if err != nil {
		return err
	}
	parts, peers, err := a.openPartitions(ctx, t, r, 0, false)
	if err != nil {
		return err
	}
	a.putTopic(newTopicEntry(t, r, parts, peers))
	a.logger.Info("topic found in the store", "topic", t.Name, "partitions", t.Partitions, "local", len(parts))
	return nil
}

// topicEntries returns the served topics.
func (a *Agent) topicEntries() []*topicEntry {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]*topicEntry, 0, len(a.topics))
	for _, e := range a.topics {
		out = append(out, e)
	}
	return out
}

// dropConcurrency is how many partitions of a dropped topic are closed and
// removed at once: each close fsyncs its files, and one at a time a topic
// of 1,000 partitions took 3.5-10 s to drop.
const dropConcurrency = 16

// dropTopicLocked stops serving a topic the store no longer has (or has
// under another id) and removes its local data. a.adminMu is held.
func (a *Agent) dropTopicLocked(e *topicEntry, why string) {
	a.mu.Lock()
	if a.topics[e.meta.Name] == e {
		delete(a.topics, e.meta.Name)
	}
	delete(a.byID, e.meta.ID)
	a.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(dropConcurrency)
	for _, p := range e.parts {
		g.Go(func() error {
			if err := p.Close(); err != nil {
				a.logger.Warn("close deleted partition", "topic", e.meta.Name, "partition", p.Index(), "err", err)
			}
			a.removeDir(partition.DirName(e.meta.Name, p.Index()), why)
			return nil
		})
	}
	g.Wait()
	a.signal.Notify() // long polls on the topic answer now
	a.logger.Info("topic dropped", "topic", e.meta.Name, "why", why)
}
