package agent

// The agent's side of its topic table (agent/topics): the table sees the
// agent as topics.Host, which opens a topic's local partitions (their
// logs, replication and tiering) and removes their directories. The
// directories of topics gone from the store are removed here at start.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/topics"
)

// tableHost implements topics.Host.
type tableHost struct{ a *Agent }

var _ topics.Host = tableHost{}

func (h tableHost) OpenPartitions(ctx context.Context, t metadata.Topic, r metadata.Resolved, first int32, restart bool) ([]*partition.Partition, []*partition.Peer, error) {
	return h.a.openPartitions(ctx, t, r, first, restart)
}
func (h tableHost) OpenTiering(ctx context.Context, p *partition.Partition) error {
	return p.OpenTiering(ctx, h.a.tier)
}
func (h tableHost) RemoveDir(name, why string) { h.a.removeDir(name, why) }
func (h tableHost) PlacementAgents() []int32   { return h.a.placementAgents() }
func (h tableHost) Announce() error            { return h.a.announcer(topicsKey)() }

// newTopicTable is the agent's topic table, empty until loadTopics.
func (a *Agent) newTopicTable() *topics.Table {
	return topics.New(topics.Config{Defaults: a.cfg.TopicDefaults, NumPartitions: a.cfg.NumPartitions,
		DefaultReplicationFactor: a.cfg.DefaultReplicationFactor, AutoCreate: a.cfg.AutoCreateTopics,
		Flush: a.flush, FlushInterval: a.cfg.LogFlushInterval, Diskless: disklessTable{a}}, a.store, tableHost{a}, &a.signal, a.logger)
}

// localPartitions returns every open partition, ordered by topic and index.
func (a *Agent) localPartitions() []*partition.Partition { return a.topics.Partitions() }

// Topics are the served topics, ordered by name.
func (a *Agent) Topics() []*kafka.Topic { return a.topics.Topics() }

// Topic is a served topic by name.
func (a *Agent) Topic(name string) (*kafka.Topic, bool) { return a.topics.Topic(name) }

func (a *Agent) entry(name string) (*topics.Entry, bool) { return a.topics.Entry(name) }

// logConfig turns a topic's effective configs into a partition log config.
func (a *Agent) logConfig(r metadata.Resolved) log.Config {
	return topics.LogConfig(r, a.flush, a.cfg.LogFlushInterval)
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
		partition.Deps{Cluster: a.ctl, Logger: a.logger, Metrics: a.partMetrics, Notify: a.signal.Notify, Started: a.running, Peer: a.peer, Fetchers: a.fetchers})
}

// loadTopics fills the topic table from the store (topics.Table.Load),
// then removes partition directories whose topic is gone from the store
// (left by a delete that crashed half-way).
func (a *Agent) loadTopics(ctx context.Context) error {
	if err := a.topics.Load(ctx); err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, p := range a.topics.Partitions() {
		keep[partition.DirName(p.Topic(), p.Index())] = true
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
		if _, ok := a.topics.TopicByID(id); ok {
			// A topic this agent serves, in a partition the store no
			// longer gives it: moved to other agents while this one was
			// away (control/lost.go). A later move back starts it empty,
			// as a new replica.
			a.removeDir(de.Name(), "the replica moved to other agents while this agent was away")
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

// openConcurrency is how many partitions of a topic are opened at once:
// each is a read of its state from the store, a log opened (files created
// and fsynced) and, when tiered, the bucket's manifest read. One at a
// time, a topic of 1,000 partitions took seconds to create, and an agent
// of thousands as long to start.
const openConcurrency = 16

// openPartitions (topics.Host.OpenPartitions) opens the local partitions
// of t from index first on, openConcurrency at a time, and applies their
// states. On an error it closes what it opened. The partitions of which
// this agent holds no replica come back as peers. Both lists are in index
// order.
//
// At start (restart set), a partition whose state names this agent leader
// is taken over in a new leader epoch: the log may have lost records it
// had not fsynced but followers had fetched, and new records must never
// reuse those offsets under the same epoch. A partition whose directory is
// gone (a lost disk) while the state lists this agent in the ISR with
// others is handed to them instead (control.Controller.LeaveISRLostDisk).
func (a *Agent) openPartitions(ctx context.Context, t metadata.Topic, r metadata.Resolved, first int32, restart bool) ([]*partition.Partition, []*partition.Peer, error) {
	n := max(t.Partitions-first, 0)
	opened := make([]*partition.Partition, n)
	peerOf := make([]*partition.Peer, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(openConcurrency)
	for i := first; i < t.Partitions; i++ {
		g.Go(func() error {
			p, peer, err := a.openOne(gctx, t, r, i, restart)
			opened[i-first], peerOf[i-first] = p, peer
			return err
		})
	}
	err := g.Wait()
	var parts []*partition.Partition
	var peers []*partition.Peer
	for i := range n {
		if opened[i] != nil {
			parts = append(parts, opened[i])
		}
		if peerOf[i] != nil {
			peers = append(peers, peerOf[i])
		}
	}
	if err != nil {
		for _, p := range parts {
			p.Close()
		}
		return nil, nil, err
	}
	return parts, peers, nil
}

// openOne is openPartitions' work for partition i: the local partition,
// opened and in its state, or the peer when this agent holds no replica.
// A partition opened before a failure comes back with the error, for the
// caller to close.
func (a *Agent) openOne(ctx context.Context, t metadata.Topic, r metadata.Resolved, i int32, restart bool) (*partition.Partition, *partition.Peer, error) {
	st, etag, err := a.store.PartitionState(ctx, t.ID, i)
	if err != nil {
		return nil, nil, fmt.Errorf("topic %s partition %d: %w", t.Name, i, err)
	}
	if !slices.Contains(st.Replicas, a.id) {
		return nil, partition.NewPeer(i, st), nil
	}
	_, existed := partition.ReadTopicID(a.fs, filepath.Join(a.logDir(), partition.DirName(t.Name, i)))
	p, err := a.openPartition(t, r, i, st, etag)
	if err != nil {
		return nil, nil, err
	}
	// Tiering opens first, knowing the stored leader: an empty log
	// continues where the bucket ends, and a leader's log that is
	// behind the bucket is refused.
	if r.RemoteStorage {
		if err := p.OpenTiering(ctx, a.tier); err != nil {
			return p, nil, err
		}
	}
	switch {
	case restart && !existed && slices.Contains(st.ISR, a.id) && len(st.ISR) > 1:
		err = a.ctl.LeaveISRLostDisk(ctx, p, st, etag)
	case restart && st.Leader == a.id:
		next := st
		next.LeaderEpoch, next.StateEpoch = st.LeaderEpoch+1, st.StateEpoch+1
		err = a.ctl.TakeOver(ctx, p, st, next, etag, "agent restarted")
	default:
		a.ctl.ApplyState(p, st, etag)
	}
	return p, nil, err
}
