package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/strata-streaming/strata/agent/metadata"
)

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
var errAlreadyCompact = errors.New("agent: topic is already compacted")

// compactInternalTopics migrates the coordinators' topics this agent
// loaded. A failure is logged and retried at the next start: the topic
// works as before meanwhile, uncleaned.
func (a *Agent) compactInternalTopics(ctx context.Context) {
	a.adminMu.Lock()
	defer a.adminMu.Unlock()
	for _, name := range []string{offsetsTopic, txnTopic} {
		e, ok := a.entry(name)
		if !ok || e.snap.Resolved.Compact {
			continue
		}
		if why := bucketOnly(e); why != "" {
			a.logger.Warn("not moving a tiered internal topic to cleanup.policy=compact: part of it may be in the bucket alone",
				"topic", name, "why", why)
			continue
		}
		var before string
		t, err := a.store.UpdateTopic(ctx, name, func(t *metadata.Topic) error {
			r, err := metadata.Resolve(t.Configs, a.cfg.TopicDefaults)
			if err != nil {
				return err
			}
			if r.Compact {
				return errAlreadyCompact
			}
			before = t.Configs[metadata.CleanupPolicy]
			t.Configs = maps.Clone(t.Configs)
			if t.Configs == nil {
				t.Configs = map[string]string{}
			}
			t.Configs[metadata.CleanupPolicy] = "compact"
			delete(t.Configs, metadata.RemoteStorageEnable) // a compacted topic is not tiered
			return nil
		})
		if errors.Is(err, errAlreadyCompact) {
			continue // reconcile brings the new configs here
		}
		if err == nil {
			var r metadata.Resolved
			if r, err = metadata.Resolve(t.Configs, a.cfg.TopicDefaults); err == nil {
				err = a.applyTopicLocked(ctx, e, t, r)
			}
		}
		if err != nil {
			a.logger.Warn("cannot move internal topic to cleanup.policy=compact; retrying at the next start", "topic", name, "err", err)
			continue
		}
		if before == "" {
			before = "delete (default)"
		}
		a.logger.Info("internal topic moved to cleanup.policy=compact", "topic", name, "cleanup_policy_before", before)
	}
}

// bucketOnly says why part of a tiered topic's log may be in the bucket
// alone; "" when the topic is not tiered or its local logs are whole.
func bucketOnly(e *topicEntry) string {
	r := e.snap.Resolved
	switch {
	case !r.RemoteStorage:
		return ""
	case r.LocalRetentionBytes >= 0 || r.LocalRetentionMs >= 0:
		return "local retention is limited"
	}
	for _, p := range e.parts {
		if p.LocalLogStartOffset() > p.LogStartOffset() {
			return fmt.Sprintf("partition %d starts at %d locally, %d in the bucket", p.Index(), p.LocalLogStartOffset(), p.LogStartOffset())
		}
	}
	return ""
}
