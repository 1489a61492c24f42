package topics

// The Kafka handlers' TopicAdmin (agent/kafka): create, delete, add
// partitions, alter configs. Each holds adminMu throughout, writes the
// store first and changes the local state after.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/placement"
)

// CreateTopic implements TopicAdmin: partitions < 0 and rf < 0 take
// the agent's defaults. A diskless topic's replication factor is
// accepted and ignored: its partitions have no replicas.
func (t *Table) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (*dataplane.Topic, error) {
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	if Internal(name) {
		return nil, fmt.Errorf("%w: %q is a coordinator's internal topic; it is created on first use", metadata.ErrInvalidTopic, name)
	}
	if err := metadata.ValidateTopicName(name); err != nil {
		return nil, err
	}
	if partitions < 0 {
		partitions = t.cfg.NumPartitions
	}
	if rf < 0 {
		rf = t.defaultReplicationFactor()
	}
	configs = withMinISRDefault(configs, rf, t.cfg.Defaults)
	if validateOnly {
		resolved, _, err := t.checkNewTopic(name, partitions, rf, configs)
		if err != nil {
			return nil, err
		}
		return &dataplane.Topic{Name: name, Configs: maps.Clone(configs), Resolved: resolved, PartitionCount: partitions, ReplicationFactor: rf}, nil
	}
	return t.createTopicLocked(ctx, name, partitions, rf, configs)
}

// defaultReplicationFactor is --default-replication-factor, or when that
// is 0, 3 with at least three live agents and else the number alive.
func (t *Table) defaultReplicationFactor() int16 {
	if rf := t.cfg.DefaultReplicationFactor; rf > 0 {
		return rf
	}
	return int16(min(3, len(t.host.PlacementAgents())))
}

// withMinISRDefault sets min.insync.replicas=2 on a topic of three or more
// replicas that sets none, when the agents' default is Kafka's 1: with
// one in-sync copy an acks=all write would survive no failure. The value
// is stored with the topic, so DescribeConfigs shows it.
func withMinISRDefault(configs map[string]string, rf int16, defaults metadata.Defaults) map[string]string {
	if rf < 3 || metadata.Diskless(configs) {
		return configs
	}
	if _, ok := configs[metadata.MinInsyncReplicas]; ok {
		return configs
	}
	if _, ok := defaults[metadata.MinInsyncReplicas]; ok {
		return configs
	}
	out := maps.Clone(configs)
	if out == nil {
		out = map[string]string{}
	}
	out[metadata.MinInsyncReplicas] = "2"
	return out
}

// collision returns a name among names that equals name once '.' and '_'
// are treated alike: Kafka refuses such pairs because their metric names
// would clash.
func collision[V any](name string, names map[string]V) (string, bool) {
	norm := strings.ReplaceAll(name, ".", "_")
	for other := range names {
		if other != name && strings.ReplaceAll(other, ".", "_") == norm {
			return other, true
		}
	}
	return "", false
}

// collides reports a live topic that collides with name (collision).
func (t *Table) collides(name string) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return collision(name, t.byName)
}

// checkNewTopic validates a topic about to be created and places its
// replicas; a diskless topic has none to place (nil assignment). t.adminMu
// is held.
func (t *Table) checkNewTopic(name string, partitions int32, rf int16, configs map[string]string) (metadata.Resolved, [][]int32, error) {
	if partitions == 0 {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: topic %q: 0 partitions; must be at least 1", metadata.ErrInvalidPartitions, name)
	}
	agents := t.host.PlacementAgents()
	if (rf == 0 || int(rf) > len(agents)) && !metadata.Diskless(configs) {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: topic %q: replication factor %d; must be 1 to %d (the live agents)", metadata.ErrInvalidReplicationFactor, name, rf, len(agents))
	}
	resolved, err := metadata.Resolve(configs, t.cfg.Defaults)
	if err != nil {
		return metadata.Resolved{}, nil, fmt.Errorf("topic %q: %w", name, err)
	}
	if resolved.Diskless {
		if err := t.checkDiskless(name, configs, resolved); err != nil {
			return metadata.Resolved{}, nil, err
		}
	}
	if _, ok := t.Entry(name); ok {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: %q", metadata.ErrTopicExists, name)
	}
	if other, ok := t.collides(name); ok {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: %q collides with existing topic %q ('.' and '_' are treated alike)", metadata.ErrInvalidTopic, name, other)
	}
	if resolved.Diskless {
		return resolved, nil, nil
	}
	assignment, err := placement.Assign(partitions, rf, agents, rand.IntN(len(agents)))
	if err != nil {
		return metadata.Resolved{}, nil, err
	}
	return resolved, assignment, nil
}

// createTopicLocked creates a topic in the store and opens its local
// partitions. t.adminMu is held.
func (t *Table) createTopicLocked(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) (*dataplane.Topic, error) {
	resolved, assignment, err := t.checkNewTopic(name, partitions, rf, configs)
	if err != nil {
		return nil, err
	}
	m, err := t.store.CreateTopic(ctx, name, partitions, assignment, configs)
	if err != nil {
		return nil, err
	}
	e, err := t.openLocked(ctx, m, resolved, nil, false)
	if err != nil {
		return nil, err
	}
	t.put(e)
	t.announce()
	t.logger.Info("topic created", "topic", name, "partitions", partitions, "replication_factor", e.Snap.ReplicationFactor, "diskless", resolved.Diskless)
	return e.Snap, nil
}

// announce tells the other agents that topics changed; a lost
// announcement is repaired by their next periodic reconcile.
func (t *Table) announce() {
	if err := t.host.Announce(); err != nil {
		t.logger.Warn("announce topic change", "err", err)
	}
}

// DeleteTopic implements TopicAdmin. The store delete comes first: once
// it returns the topic is gone for every agent, and the local files are
// removed after (a crash in between leaves directories that the next start
// removes).
func (t *Table) DeleteTopic(ctx context.Context, name string) error {
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	e, ok := t.Entry(name)
	if !ok {
		return fmt.Errorf("%w: %q", metadata.ErrUnknownTopic, name)
	}
	if err := t.store.DeleteTopic(ctx, name); err != nil {
		return err
	}
	t.dropLocked(e, "topic deleted")
	t.announce()
	return nil
}

// mutableTopic returns a topic that clients may change. The internal
// topics are not: more partitions would move groups and transactional ids
// away from their state, and their configs are the agent's. t.adminMu is
// held.
func (t *Table) mutableTopic(name string) (*Entry, error) {
	if Internal(name) {
		return nil, fmt.Errorf("%w: %q is internal; clients cannot change it", metadata.ErrInvalidTopic, name)
	}
	e, ok := t.Entry(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", metadata.ErrUnknownTopic, name)
	}
	return e, nil
}

// CreatePartitions implements TopicAdmin.
func (t *Table) CreatePartitions(ctx context.Context, name string, total int32, validateOnly bool) error {
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	e, err := t.mutableTopic(name)
	if err != nil {
		return err
	}
	current := e.Meta.Partitions
	if total <= current {
		return fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger", metadata.ErrInvalidPartitions, name, current, total)
	}
	var assignment [][]int32 // none for a diskless topic
	if !e.Meta.Diskless() {
		assignment, err = placement.Assign(total-current, e.Snap.ReplicationFactor, t.host.PlacementAgents(), int(current))
		if err != nil {
			return err
		}
	}
	if validateOnly {
		return nil
	}
	m, err := t.store.AddPartitions(ctx, name, total, assignment)
	if err != nil {
		return err
	}
	grown, err := t.openLocked(ctx, m, e.Snap.Resolved, e, false)
	if err != nil {
		return err
	}
	t.put(grown)
	t.logger.Info("partitions added", "topic", name, "from", current, "to", total)
	t.announce()
	return nil
}

// AlterTopicConfigs implements TopicAdmin. The store is changed first;
// the partitions' logs take the new settings after it succeeded.
func (t *Table) AlterTopicConfigs(ctx context.Context, name string, fn func(map[string]string) (map[string]string, error), validateOnly bool) error {
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	e, err := t.mutableTopic(name)
	if err != nil {
		return err
	}
	next, err := fn(maps.Clone(e.Meta.Configs))
	if err != nil {
		return err
	}
	resolved, err := metadata.Resolve(next, t.cfg.Defaults)
	if err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	// A diskless topic stays diskless and a classic one classic; a
	// diskless one refuses what it refused at creation.
	if err := metadata.CheckDisklessUnchanged(name, e.Meta.Configs, next); err != nil {
		return err
	}
	if err := metadata.CheckDiskless(next, resolved); err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	if e.Snap.Resolved.RemoteStorage && resolved.Compact && !resolved.RemoteStorage {
		// A compacted topic is tiered only when it sets remote.storage.enable
		// (metadata.Resolve); a tiered topic that turns compact must, since
		// it cannot stop tiering.
		return fmt.Errorf("%w: topic %q is tiered: %s=compact needs %s=true set on the topic", metadata.ErrInvalidConfig, name, metadata.CleanupPolicy, metadata.RemoteStorageEnable)
	}
	if e.Snap.Resolved.RemoteStorage && !resolved.RemoteStorage {
		// The bucket may hold records the local log no longer has.
		return fmt.Errorf("%w: topic %q: %s cannot be turned off once on; delete and re-create the topic instead", metadata.ErrInvalidConfig, name, metadata.RemoteStorageEnable)
	}
	if validateOnly {
		return nil
	}
	m, err := t.store.UpdateTopic(ctx, name, func(m *metadata.Topic) error {
		m.Configs = next
		return nil
	})
	if err != nil {
		return err
	}
	err = t.applyLocked(ctx, e, m, resolved)
	t.logger.Info("topic configs altered", "topic", name)
	t.announce()
	return err
}

// applyLocked makes a changed topic (configs, here or on another agent)
// the served one: a new entry, and the new settings on every local
// partition log. t.adminMu is held.
func (t *Table) applyLocked(ctx context.Context, e *Entry, m metadata.Topic, resolved metadata.Resolved) error {
	t.put(e.changed(m, resolved))
	var errs []error
	for _, p := range e.Parts {
		p.SetMinISR(resolved.MinInsyncReplicas)
		cfg := t.logConfig(resolved)
		if resolved.RemoteStorage && p.Remote() == nil {
			// Tiering starts before the log defers deletions to uploads.
			// If it cannot start now the retention loop tries again, and
			// the log deletes nothing meanwhile: deleting by the topic's
			// limits, untiered, could take segments the bucket does not
			// have yet, leaving a hole tiering cannot pass.
			if err := t.host.OpenTiering(ctx, p); err != nil {
				errs = append(errs, err)
			}
		}
		if err := p.LocalLog().SetConfig(cfg); err != nil {
			errs = append(errs, fmt.Errorf("topic %q partition %d: apply configs: %w", m.Name, p.Index(), err))
		}
	}
	return errors.Join(errs...)
}
