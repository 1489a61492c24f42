package agent

import (
	"context"
	"errors"
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
// compacted topic is tiered only when it says so (metadata.Resolve): the
// move writes remote.storage.enable=true explicitly for a topic that was
// tiered, so that what only the bucket holds (a limited local retention,
// a replica restored from the bucket after a disk loss) stays readable, and
// the bucket part is compacted in place (docs/design.md, tiered
// compaction).

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
			if r.RemoteStorage {
				t.Configs[metadata.RemoteStorageEnable] = "true"
			}
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
