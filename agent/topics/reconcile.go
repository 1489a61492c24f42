package topics

// Topics changed by other agents (package comment: gossip is a hint, the
// store is the truth). The agent calls Reconcile when gossip says topics
// changed and every --reconcile-interval.

import (
	"context"
	"maps"

	"golang.org/x/sync/errgroup"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
)

// Reconcile brings the served topics in line with the store: it adopts
// new topics, opens new partitions, applies changed configs, and drops
// topics deleted or re-created elsewhere. A topic it cannot bring in line
// is logged and left for the next round.
func (t *Table) Reconcile(ctx context.Context) error {
	// Listed under adminMu, so that a topic this agent creates or deletes
	// meanwhile is not mistaken for another agent's change.
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	stored, err := t.store.Topics(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, m := range stored {
		seen[m.Name] = true
		e, ok := t.Entry(m.Name)
		if ok && e.Meta.ID != m.ID {
			t.dropLocked(e, "re-created by another agent")
			ok = false
		}
		r, err := metadata.Resolve(m.Configs, t.cfg.Defaults)
		if err != nil {
			t.logger.Warn("reconcile: topic configs", "topic", m.Name, "err", err)
			continue
		}
		switch {
		case !ok:
			if err := t.adoptLocked(ctx, m.Name); err != nil {
				t.logger.Warn("reconcile: open topic", "topic", m.Name, "err", err)
				continue
			}
		case m.Partitions > e.Meta.Partitions:
			grown, err := t.openLocked(ctx, m, r, e, false)
			if err != nil {
				t.logger.Warn("reconcile: open new partitions", "topic", m.Name, "err", err)
				continue
			}
			t.put(grown)
		case !maps.Equal(m.Configs, e.Meta.Configs):
			if err := t.applyLocked(ctx, e, m, r); err != nil {
				t.logger.Warn("reconcile: apply topic configs", "topic", m.Name, "err", err)
			}
		}
	}
	for _, e := range t.entries() {
		if seen[e.Meta.Name] {
			continue
		}
		// Listing skips topics this agent cannot read (a newer version's):
		// only a topic whose id is gone from the store is deleted.
		if exists, err := t.store.TopicIDExists(ctx, e.Meta.ID); err != nil || exists {
			continue
		}
		t.dropLocked(e, "deleted by another agent")
	}
	return nil
}

// adoptLocked starts serving a topic found in the store. t.adminMu is
// held.
func (t *Table) adoptLocked(ctx context.Context, name string) error {
	m, err := t.store.Topic(ctx, name)
	if err != nil {
		return err
	}
	r, err := metadata.Resolve(m.Configs, t.cfg.Defaults)
	if err != nil {
		return err
	}
	e, err := t.openLocked(ctx, m, r, nil, false)
	if err != nil {
		return err
	}
	t.put(e)
	t.logger.Info("topic found in the store", "topic", m.Name, "partitions", m.Partitions, "local", len(e.Parts), "diskless", m.Diskless())
	return nil
}

// dropConcurrency is how many partitions of a dropped topic are closed and
// removed at once: each close fsyncs its files, and one at a time a topic
// of 1,000 partitions took 3.5-10 s to drop.
const dropConcurrency = 16

// dropLocked stops serving a topic the store no longer has (or has under
// another id) and removes its local data. t.adminMu is held.
func (t *Table) dropLocked(e *Entry, why string) {
	t.mu.Lock()
	if t.byName[e.Meta.Name] == e {
		delete(t.byName, e.Meta.Name)
	}
	delete(t.byID, e.Meta.ID)
	t.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(dropConcurrency)
	for _, p := range e.Parts {
		g.Go(func() error {
			if err := p.Close(); err != nil {
				t.logger.Warn("close deleted partition", "topic", e.Meta.Name, "partition", p.Index(), "err", err)
			}
			t.host.RemoveDir(partition.DirName(e.Meta.Name, p.Index()), why)
			return nil
		})
	}
	g.Wait()
	t.signal.Notify() // long polls on the topic answer now
	t.logger.Info("topic dropped", "topic", e.Meta.Name, "why", why)
}
