package topics

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/strata-streaming/strata/agent/metadata"
)

// The coordinators' internal topics, Kafka's names. Their records are the
// coordinators' (agent/group, agent/txn); the table only creates the
// topics on first use (EnsureInternal) and keeps clients from creating or
// changing them.
const (
	// ConsumerOffsets holds the group coordinators' state and committed
	// offsets.
	ConsumerOffsets = "__consumer_offsets"
	// TransactionState holds the transaction coordinators' state.
	TransactionState = "__transaction_state"
	// DisklessState holds the diskless batch coordinators' state
	// (agent/batchcoord): where each diskless partition's batches are.
	DisklessState = "__diskless_state"
)

// Internal reports whether name is a coordinator's topic, which clients
// may read but not create, produce to or change, as in Kafka.
func Internal(name string) bool {
	return name == ConsumerOffsets || name == TransactionState || name == DisklessState
}

// EnsureInternal returns a coordinators' topic (ConsumerOffsets,
// TransactionState, DisklessState), creating it with partitions and configs on first
// use. It is called on every coordinator lookup, so a served topic is
// returned without adminMu.
func (t *Table) EnsureInternal(ctx context.Context, name string, partitions int32, configs map[string]string) (*Entry, error) {
	if e, ok := t.Entry(name); ok {
		return e, nil
	}
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	if e, ok := t.Entry(name); ok {
		return e, nil
	}
	// Never more replicas than live agents: a lookup must not fail with
	// INVALID_REPLICATION_FACTOR, which clients do not retry.
	rf := min(t.defaultReplicationFactor(), 3, int16(len(t.host.PlacementAgents())))
	_, err := t.createTopicLocked(ctx, name, partitions, rf, configs)
	if errors.Is(err, metadata.ErrTopicExists) {
		// Another agent created it first, and this one has not heard yet.
		err = t.adoptLocked(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	e, _ := t.Entry(name)
	return e, nil
}

// A __consumer_offsets created by a build from before log compaction has
// cleanup.policy=delete (with retention.ms=-1): it is never cleaned, so a
// coordinator's load keeps growing with every commit ever made. Each agent
// moves such a coordinators' topic to cleanup.policy=compact when it
// starts, as Kafka creates them: one conditional write of the stored
// configs, which every other agent then applies (reconcile), and which the
// first agent to start after an upgrade wins; the rest find nothing to do.
// Its other configs are kept.
//
// Such a topic was tiered by default (remote.storage.enable=true), and a
// compacted topic is not (issue 22's tiered compaction is not there
// yet): once compacted, the partitions are read from local disk only. So a
// tiered one moves only when nothing of it is in the bucket alone: its
// local retention is unlimited (as created: retention.ms=-1) and every
// replica on this agent holds its partition's whole log. A replica
// elsewhere that was restored from the bucket after a disk loss could
// still hold only a suffix; the first agent to start decides for all.
// Otherwise the topic stays as it is, with a warning, and is tried again
// at the next start. The bucket's copies are left to the topic's deletion.

// errAlreadyCompact ends a migration another agent finished first.
var errAlreadyCompact = errors.New("topics: topic is already compacted")

// CompactInternalTopics migrates the coordinators' topics this agent
// loaded. A failure is logged and retried at the next start: the topic
// works as before meanwhile, uncleaned. The agent calls it once, after
// Load.
func (t *Table) CompactInternalTopics(ctx context.Context) {
	t.adminMu.Lock()
	defer t.adminMu.Unlock()
	for _, name := range []string{ConsumerOffsets, TransactionState} {
		e, ok := t.Entry(name)
		if !ok || e.Snap.Resolved.Compact {
			continue
		}
		if why := bucketOnly(e); why != "" {
			t.logger.Warn("not moving a tiered internal topic to cleanup.policy=compact: part of it may be in the bucket alone",
				"topic", name, "why", why)
			continue
		}
		var before string
		m, err := t.store.UpdateTopic(ctx, name, func(m *metadata.Topic) error {
			r, err := metadata.Resolve(m.Configs, t.cfg.Defaults)
			if err != nil {
				return err
			}
			if r.Compact {
				return errAlreadyCompact
			}
			before = m.Configs[metadata.CleanupPolicy]
			m.Configs = maps.Clone(m.Configs)
			if m.Configs == nil {
				m.Configs = map[string]string{}
			}
			m.Configs[metadata.CleanupPolicy] = "compact"
			delete(m.Configs, metadata.RemoteStorageEnable) // a compacted topic is not tiered
			return nil
		})
		if errors.Is(err, errAlreadyCompact) {
			continue // reconcile brings the new configs here
		}
		if err == nil {
			var r metadata.Resolved
			if r, err = metadata.Resolve(m.Configs, t.cfg.Defaults); err == nil {
				err = t.applyLocked(ctx, e, m, r)
			}
		}
		if err != nil {
			t.logger.Warn("cannot move internal topic to cleanup.policy=compact; retrying at the next start", "topic", name, "err", err)
			continue
		}
		if before == "" {
			before = "delete (default)"
		}
		t.logger.Info("internal topic moved to cleanup.policy=compact", "topic", name, "cleanup_policy_before", before)
	}
}

// bucketOnly says why part of a tiered topic's log may be in the bucket
// alone; "" when the topic is not tiered or its local logs are whole.
func bucketOnly(e *Entry) string {
	r := e.Snap.Resolved
	switch {
	case !r.RemoteStorage:
		return ""
	case r.LocalRetentionBytes >= 0 || r.LocalRetentionMs >= 0:
		return "local retention is limited"
	}
	for _, p := range e.Parts {
		if p.LocalLogStartOffset() > p.LogStartOffset() {
			return fmt.Sprintf("partition %d starts at %d locally, %d in the bucket", p.Index(), p.LocalLogStartOffset(), p.LogStartOffset())
		}
	}
	return ""
}
