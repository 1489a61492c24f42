package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"

	"github.com/strata-streaming/strata/agent/placement"
)

// topicEntry is a topic this agent serves: its stored metadata, its local
// partitions, and the immutable snapshot handed to the Kafka handlers. A
// change builds a new entry; handlers holding the old snapshot keep a
// consistent view, and partitions are shared between the two.
type topicEntry struct {
	meta  metadata.Topic
	parts []*partition.Partition // this agent's replicas
	peers []*partition.Peer      // partitions only other agents hold
	snap  *kafka.Topic           // also holds the resolved configs
}

func newTopicEntry(meta metadata.Topic, resolved metadata.Resolved, parts []*partition.Partition, peers []*partition.Peer) *topicEntry {
	e := &topicEntry{meta: meta, parts: parts, peers: peers}
	rf := int16(0)
	switch {
	case len(parts) > 0:
		rf = int16(len(parts[0].Replicas()))
	case len(peers) > 0:
		rf = int16(len(peers[0].Replicas()))
	}
	e.snap = &kafka.Topic{
		Name:              meta.Name,
		ID:                meta.ID,
		Internal:          internalTopic(meta.Name),
		Configs:           maps.Clone(meta.Configs),
		Resolved:          resolved,
		PartitionCount:    meta.Partitions,
		ReplicationFactor: rf,
	}
	// In partition order, this agent's replicas and the others' alike, so
	// handlers index the list by partition number.
	for _, p := range parts {
		e.snap.Partitions = append(e.snap.Partitions, p)
	}
	for _, p := range peers {
		e.snap.Partitions = append(e.snap.Partitions, p)
	}
	slices.SortFunc(e.snap.Partitions, func(x, y kafka.Partition) int { return int(x.Index() - y.Index()) })
	return e
}

// logConfig turns a topic's effective configs into a partition log config.
func (a *Agent) logConfig(r metadata.Resolved) log.Config {
	c := log.DefaultConfig()
	// Kafka accepts segment.bytes down to 14; a segment must hold at least
	// one batch header, so tiny values are raised to that.
	c.SegmentBytes = max(r.SegmentBytes, 61)
	// Kafka accepts millisecond values up to Long.MAX; past ~292 years a
	// time.Duration overflows, so such values mean "never" here.
	c.SegmentMs = time.Duration(r.SegmentMs) * time.Millisecond
	if r.SegmentMs > metadata.MaxDurationMs {
		c.SegmentMs = 0 // never roll by age
	}
	c.RetentionBytes = r.RetentionBytes
	c.RetentionMs = time.Duration(r.RetentionMs) * time.Millisecond
	if r.RetentionMs < 0 || r.RetentionMs > metadata.MaxDurationMs {
		c.RetentionMs = -1 // forever
	}
	c.Remote = r.RemoteStorage
	c.LocalRetentionBytes = r.LocalRetentionBytes
	c.LocalRetentionMs = time.Duration(r.LocalRetentionMs) * time.Millisecond
	if r.LocalRetentionMs < 0 || r.LocalRetentionMs > metadata.MaxDurationMs {
		c.LocalRetentionMs = -1 // forever
	}
	c.IndexIntervalBytes = int(r.IndexIntervalBytes)
	c.Compact, c.Delete = r.Compact, r.Delete
	c.DeleteRetention = metadata.Millis(r.DeleteRetentionMs)
	if r.Compact && r.RemoteStorage {
		// The bucket holds the log's older records, which the local
		// cleaner does not see: a tombstone it dropped could leave an
		// older value of its key live in the bucket. Tombstones are
		// dropped by the leader's remote compaction instead, whose passes
		// start at the bucket's start (docs/design.md, tiered compaction);
		// local retention removes the local copies once uploaded.
		c.DeleteRetention = metadata.Millis(metadata.MaxDurationMs)
	}
	c.MinCompactionLag = metadata.Millis(r.MinCompactionLagMs)
	c.MaxCompactionLag = metadata.Millis(r.MaxCompactionLagMs)
	if r.MaxCompactionLagMs > metadata.MaxDurationMs {
		c.MaxCompactionLag = 0 // Long.MAX, the default: never overdue
	}
	c.MinCleanableDirtyRatio = r.MinCleanableDirtyRatio
	c.Flush = a.flush
	c.FlushInterval = a.cfg.LogFlushInterval
	return c
}

func (a *Agent) logDir() string { return filepath.Join(a.cfg.DataDir, "log") }

// openPartition opens (creating if needed) the log of partition index of t
// and the partition on it, in the state st (with its ETag) that the store
// holds; the caller applies a state next. A directory of the same name
// left by an earlier topic (another topic id) is removed first, so a
// re-created topic never inherits old records.
func (a *Agent) openPartition(t metadata.Topic, r metadata.Resolved, index int32, st metadata.PartitionState, etag string) (*partition.Partition, error) {
	name := partition.DirName(t.Name, index)
	dir := filepath.Join(a.logDir(), name)
	if id, ok := partition.ReadTopicID(a.fs, dir); ok && id != t.ID {
		a.removeDir(name, "belongs to an earlier topic of the same name")
	}
	if err := partition.WriteMeta(a.fs, dir, t.ID); err != nil {
		return nil, fmt.Errorf("topic %s partition %d: write %s: %w", t.Name, index, partition.MetaFile, err)
	}
	l, err := log.Open(dir, a.logConfig(r), log.Options{FS: a.fs, Logger: a.logger.With("topic", t.Name, "partition", index), Syncer: a.syncer, Files: a.files,
		Preallocate: a.cfg.LogPreallocate && a.flush == log.FlushAlways})
	if err != nil {
		return nil, fmt.Errorf("topic %s partition %d: %w", t.Name, index, err)
	}
	return partition.Open(partition.Config{Topic: t.Name, TopicID: t.ID, Index: index, AgentID: a.id, Log: l, Flush: a.flush,
		MinISR: r.MinInsyncReplicas, Stored: st, ETag: etag},
		partition.Deps{Cluster: a.ctl, Logger: a.logger, Metrics: a.partMetrics, Notify: a.signal.Notify, Started: a.running, Peer: a.peer})
}

// loadTopics opens every partition of every stored topic that this agent
// replicates, then removes partition directories whose topic is gone from
// the store (left by a delete that crashed half-way).
func (a *Agent) loadTopics(ctx context.Context) error {
	topics, err := a.store.Topics(ctx)
	if err != nil {
		return fmt.Errorf("read topics from the store: %w", err)
	}
	keep := map[string]bool{}
	for _, t := range topics {
		r, err := metadata.Resolve(t.Configs, a.cfg.TopicDefaults)
		if err != nil {
			return fmt.Errorf("topic %s: stored configs: %w", t.Name, err)
		}
		parts, peers, err := a.openPartitions(ctx, t, r, 0, true)
		if err != nil {
			return err
		}
		for _, p := range parts {
			keep[partition.DirName(t.Name, p.Index())] = true
		}
		a.putTopic(newTopicEntry(t, r, parts, peers))
	}
	entries, err := os.ReadDir(a.logDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("list %s: %w", a.logDir(), err)
	}
	for _, de := range entries {
		if keep[de.Name()] || !de.IsDir() {
			continue
		}
		// Only a directory whose topic id is gone from the store is
		// garbage: a topic the listing skipped (unreadable, or written by
		// a newer version) still owns its data.
		id, ok := partition.ReadTopicID(a.fs, filepath.Join(a.logDir(), de.Name()))
		if !ok {
			a.logger.Warn("keeping partition directory without a readable topic id", "dir", de.Name())
			continue
		}
		exists, err := a.store.TopicIDExists(ctx, id)
		if err != nil || exists {
			a.logger.Error("keeping partition directory of a topic that could not be read", "dir", de.Name(),
				"topic_id", metadata.FormatTopicID(id), "err", err)
			continue
		}
		a.removeDir(de.Name(), "its topic was deleted")
	}
	return nil
}

// removeDir deletes a partition's local directory. It logs at info: the
// callers delete only what the store no longer gives this agent (a deleted
// topic, a replica moved away), and a 1,000-partition delete would
// otherwise write 1,000 warnings about nothing wrong.
func (a *Agent) removeDir(name, why string) {
	dir := filepath.Join(a.logDir(), name)
	a.logger.Info("removing partition directory", "dir", dir, "reason", why)
	if err := os.RemoveAll(dir); err != nil {
		a.logger.Error("remove partition directory", "dir", dir, "err", err)
	}
}

// localPartitions returns every open partition, ordered by topic and index.
func (a *Agent) localPartitions() []*partition.Partition {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []*partition.Partition
	for _, e := range a.topics {
		out = append(out, e.parts...)
	}
	slices.SortFunc(out, func(x, y *partition.Partition) int {
		if c := strings.Compare(x.Topic(), y.Topic()); c != 0 {
			return c
		}
		return int(x.Index() - y.Index())
	})
	return out
}

func (a *Agent) putTopic(e *topicEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.topics[e.meta.Name] = e
	a.byID[e.meta.ID] = e
}

func (a *Agent) entry(name string) (*topicEntry, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	e, ok := a.topics[name]
	return e, ok
}

// Topics, Topic and TopicByID implement kafka.TopicReader.
func (a *Agent) Topics() []*kafka.Topic {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]*kafka.Topic, 0, len(a.topics))
	for _, e := range a.topics {
		out = append(out, e.snap)
	}
	slices.SortFunc(out, func(x, y *kafka.Topic) int { return strings.Compare(x.Name, y.Name) })
	return out
}

func (a *Agent) Topic(name string) (*kafka.Topic, bool) {
	e, ok := a.entry(name)
	if !ok {
		return nil, false
	}
	return e.snap, true
}

func (a *Agent) TopicByID(id [16]byte) (*kafka.Topic, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	e, ok := a.byID[id]
	if !ok {
		return nil, false
	}
	return e.snap, true
}

// collides reports a live topic whose name equals name once '.' and '_'
// are treated alike: Kafka refuses such pairs because their metric names
// would clash.
func (a *Agent) collides(name string) (string, bool) {
	norm := strings.ReplaceAll(name, ".", "_")
	a.mu.RLock()
	defer a.mu.RUnlock()
	for other := range a.topics {
		if other != name && strings.ReplaceAll(other, ".", "_") == norm {
			return other, true
		}
	}
	return "", false
}

// CreateTopic implements kafka.TopicAdmin.
func (a *Agent) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string, validateOnly bool) (*kafka.Topic, error) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	if internalTopic(name) {
		return nil, fmt.Errorf("%w: %q is a coordinator's internal topic; it is created on first use", metadata.ErrInvalidTopic, name)
	}
	if err := metadata.ValidateTopicName(name); err != nil {
		return nil, err
	}
	if partitions < 0 {
		partitions = a.cfg.NumPartitions
	}
	if rf < 0 {
		rf = a.defaultReplicationFactor()
	}
	configs = withMinISRDefault(configs, rf, a.cfg.TopicDefaults)
	if validateOnly {
		resolved, _, err := a.checkNewTopic(name, partitions, rf, configs)
		if err != nil {
			return nil, err
		}
		return &kafka.Topic{Name: name, Configs: maps.Clone(configs), Resolved: resolved, PartitionCount: partitions, ReplicationFactor: rf}, nil
	}
	return a.createTopicLocked(ctx, name, partitions, rf, configs)
}

// defaultReplicationFactor is --default-replication-factor, or when that
// is 0, 3 with at least three live agents and else the number alive.
func (a *Agent) defaultReplicationFactor() int16 {
	if rf := a.cfg.DefaultReplicationFactor; rf > 0 {
		return rf
	}
	return int16(min(3, len(a.placementAgents())))
}

// withMinISRDefault sets min.insync.replicas=2 on a topic of three or more
// replicas that sets none, when the agents' default is Kafka's 1: with
// one in-sync copy an acks=all write would survive no failure. The value
// is stored with the topic, so DescribeConfigs shows it.
func withMinISRDefault(configs map[string]string, rf int16, defaults metadata.Defaults) map[string]string {
	if rf < 3 {
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

// checkNewTopic validates a topic about to be created and places its
// replicas. a.adminMu is held.
func (a *Agent) checkNewTopic(name string, partitions int32, rf int16, configs map[string]string) (metadata.Resolved, [][]int32, error) {
	if partitions == 0 {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: topic %q: 0 partitions; must be at least 1", metadata.ErrInvalidPartitions, name)
	}
	agents := a.placementAgents()
	if rf == 0 || int(rf) > len(agents) {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: topic %q: replication factor %d; must be 1 to %d (the live agents)", metadata.ErrInvalidReplicationFactor, name, rf, len(agents))
	}
	resolved, err := metadata.Resolve(configs, a.cfg.TopicDefaults)
	if err != nil {
		return metadata.Resolved{}, nil, fmt.Errorf("topic %q: %w", name, err)
	}
	if _, ok := a.entry(name); ok {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: %q", metadata.ErrTopicExists, name)
	}
	if other, ok := a.collides(name); ok {
		return metadata.Resolved{}, nil, fmt.Errorf("%w: %q collides with existing topic %q ('.' and '_' are treated alike)", metadata.ErrInvalidTopic, name, other)
	}
	assignment, err := placement.Assign(partitions, rf, agents, rand.IntN(len(agents)))
	if err != nil {
		return metadata.Resolved{}, nil, err
	}
	return resolved, assignment, nil
}

// createTopicLocked creates a topic in the store and opens its local
// partitions. a.adminMu is held.
func (a *Agent) createTopicLocked(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) (*kafka.Topic, error) {
	resolved, assignment, err := a.checkNewTopic(name, partitions, rf, configs)
	if err != nil {
		return nil, err
	}
	t, err := a.store.CreateTopic(ctx, name, partitions, assignment, configs)
	if err != nil {
		return nil, err
	}
	parts, peers, err := a.openPartitions(ctx, t, resolved, 0, false)
	if err != nil {
		return nil, err
	}
	e := newTopicEntry(t, resolved, parts, peers)
	a.putTopic(e)
	a.announceTopics()
	a.logger.Info("topic created", "topic", name, "partitions", partitions, "replication_factor", rf)
	return e.snap, nil
}

// openPartitions opens the local partitions of t from index first on and
// applies their states. On an error it closes what it opened. The
// partitions of which this agent holds no replica come back as peers.
//
// At start (restart set), a partition whose state names this agent leader
// is taken over in a new leader epoch: the log may have lost records it
// had not fsynced but followers had fetched, and new records must never
// reuse those offsets under the same epoch. A partition whose directory is
// gone (a lost disk) while the state lists this agent in the ISR with
// others is handed to them instead (control.Controller.LeaveISRLostDisk).
func (a *Agent) openPartitions(ctx context.Context, t metadata.Topic, r metadata.Resolved, first int32, restart bool) (parts []*partition.Partition, peers []*partition.Peer, err error) {
	defer func() {
		if err != nil {
			for _, p := range parts {
				p.Close()
			}
			parts = nil
		}
	}()
	for i := first; i < t.Partitions; i++ {
		st, etag, err := a.store.PartitionState(ctx, t.ID, i)
		if err != nil {
			return parts, nil, fmt.Errorf("topic %s partition %d: %w", t.Name, i, err)
		}
		if !slices.Contains(st.Replicas, a.id) {
			peers = append(peers, partition.NewPeer(i, st))
			continue
		}
		_, existed := partition.ReadTopicID(a.fs, filepath.Join(a.logDir(), partition.DirName(t.Name, i)))
		p, err := a.openPartition(t, r, i, st, etag)
		if err != nil {
			return parts, nil, err
		}
		parts = append(parts, p)
		// Tiering opens first, knowing the stored leader: an empty log
		// continues where the bucket ends, and a leader's log that is
		// behind the bucket is refused.
		if r.RemoteStorage {
			if err := p.OpenTiering(ctx, a.tier); err != nil {
				return parts, nil, err
			}
		}
		if restart && !existed && slices.Contains(st.ISR, a.id) && len(st.ISR) > 1 {
			if err := a.ctl.LeaveISRLostDisk(ctx, p, st, etag); err != nil {
				return parts, nil, err
			}
		} else if restart && st.Leader == a.id {
			next := st
			next.LeaderEpoch, next.StateEpoch = st.LeaderEpoch+1, st.StateEpoch+1
			if err := a.ctl.TakeOver(ctx, p, st, next, etag, "agent restarted"); err != nil {
				return parts, nil, err
			}
		} else {
			a.ctl.ApplyState(p, st, etag)
		}
	}
	return parts, peers, nil
}

// DeleteTopic implements kafka.TopicAdmin. The store delete comes first: once
// it returns the topic is gone for every agent, and the local files are
// removed after (a crash in between leaves directories that the next start
// removes).
func (a *Agent) DeleteTopic(ctx context.Context, name string) error {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	e, ok := a.entry(name)
	if !ok {
		return fmt.Errorf("%w: %q", metadata.ErrUnknownTopic, name)
	}
	if err := a.store.DeleteTopic(ctx, name); err != nil {
		return err
	}
	a.dropTopicLocked(e, "topic deleted")
	a.announceTopics()
	return nil
}

// mutableTopic returns a topic that clients may change. The internal
// topics are not: more partitions would move groups and transactional ids
// away from their state, and their configs are the agent's. a.adminMu is
// held.
func (a *Agent) mutableTopic(name string) (*topicEntry, error) {
	if internalTopic(name) {
		return nil, fmt.Errorf("%w: %q is internal; clients cannot change it", metadata.ErrInvalidTopic, name)
	}
	e, ok := a.entry(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", metadata.ErrUnknownTopic, name)
	}
	return e, nil
}

// CreatePartitions implements kafka.TopicAdmin.
func (a *Agent) CreatePartitions(ctx context.Context, name string, total int32, validateOnly bool) error {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	e, err := a.mutableTopic(name)
	if err != nil {
		return err
	}
	current := e.meta.Partitions
	if total <= current {
		return fmt.Errorf("%w: topic %q has %d partitions; the new count %d must be larger", metadata.ErrInvalidPartitions, name, current, total)
	}
	assignment, err := placement.Assign(total-current, e.snap.ReplicationFactor, a.placementAgents(), int(current))
	if err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	t, err := a.store.AddPartitions(ctx, name, total, assignment)
	if err != nil {
		return err
	}
	added, addedPeers, err := a.openPartitions(ctx, t, e.snap.Resolved, current, false)
	if err != nil {
		return err
	}
	a.putTopic(newTopicEntry(t, e.snap.Resolved, append(slices.Clone(e.parts), added...), append(slices.Clone(e.peers), addedPeers...)))
	a.logger.Info("partitions added", "topic", name, "from", current, "to", total)
	a.announceTopics()
	return nil
}

// AlterTopicConfigs implements kafka.TopicAdmin. The store is changed first;
// the partitions' logs take the new settings after it succeeded.
func (a *Agent) AlterTopicConfigs(ctx context.Context, name string, fn func(map[string]string) (map[string]string, error), validateOnly bool) error {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	e, err := a.mutableTopic(name)
	if err != nil {
		return err
	}
	next, err := fn(maps.Clone(e.meta.Configs))
	if err != nil {
		return err
	}
	resolved, err := metadata.Resolve(next, a.cfg.TopicDefaults)
	if err != nil {
		return fmt.Errorf("topic %q: %w", name, err)
	}
	if e.snap.Resolved.RemoteStorage && resolved.Compact && !resolved.RemoteStorage {
		// A compacted topic is tiered only when it sets remote.storage.enable
		// (metadata.Resolve); a tiered topic that turns compact must, since
		// it cannot stop tiering.
		return fmt.Errorf("%w: topic %q is tiered: %s=compact needs %s=true set on the topic", metadata.ErrInvalidConfig, name, metadata.CleanupPolicy, metadata.RemoteStorageEnable)
	}
	if e.snap.Resolved.RemoteStorage && !resolved.RemoteStorage {
		// The bucket may hold records the local log no longer has.
		return fmt.Errorf("%w: topic %q: %s cannot be turned off once on; delete and re-create the topic instead", metadata.ErrInvalidConfig, name, metadata.RemoteStorageEnable)
	}
	if validateOnly {
		return nil
	}
	t, err := a.store.UpdateTopic(ctx, name, func(t *metadata.Topic) error {
		t.Configs = next
		return nil
	})
	if err != nil {
		return err
	}
	err = a.applyTopicLocked(ctx, e, t, resolved)
	a.logger.Info("topic configs altered", "topic", name)
	a.announceTopics()
	return err
}

// applyTopicLocked makes a changed topic (configs, here or on another
// agent) the served one: a new entry, and the new settings on every local
// partition log. a.adminMu is held.
func (a *Agent) applyTopicLocked(ctx context.Context, e *topicEntry, t metadata.Topic, resolved metadata.Resolved) error {
	a.putTopic(newTopicEntry(t, resolved, e.parts, e.peers))
	var errs []error
	for _, p := range e.parts {
		p.SetMinISR(resolved.MinInsyncReplicas)
		cfg := a.logConfig(resolved)
		if resolved.RemoteStorage && p.Remote() == nil {
			// Tiering starts before the log defers deletions to uploads.
			// If it cannot start now the retention loop tries again, and
			// the log deletes nothing meanwhile: deleting by the topic's
			// limits, untiered, could take segments the bucket does not
			// have yet, leaving a hole tiering cannot pass.
			if err := p.OpenTiering(ctx, a.tier); err != nil {
				errs = append(errs, err)
			}
		}
		if err := p.LocalLog().SetConfig(cfg); err != nil {
			errs = append(errs, fmt.Errorf("topic %q partition %d: apply configs: %w", t.Name, p.Index(), err))
		}
	}
	return errors.Join(errs...)
}

// internalTopic reports whether name is a coordinator's topic, which
// clients may read but not create, produce to or change, as in Kafka.
func internalTopic(name string) bool { return name == offsetsTopic || name == txnTopic }
