package metadata

// Diskless topics (docs/design.md §7a "The mode"). diskless.enable is the
// topic's own setting, given at creation: it has no agent-level default
// (Defaults.Validate refuses the key), since a default that changed later
// would change the mode of every topic created without the key. It never
// changes: UpdateTopic refuses a change, as Table.AlterTopicConfigs does
// before it with the same message. A diskless topic has no state.json
// (CreateTopic and AddPartitions write none), so nothing elects, places
// or replicates its partitions.

import (
	"fmt"
	"strings"
)

// Diskless reports whether a topic's own configs make it diskless. No
// agent default is consulted: there is none.
func Diskless(topicConfigs map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(topicConfigs[DisklessEnable]), "true")
}

// Diskless reports whether t is diskless: its partitions have no
// state.json, no replicas and no local log.
func (t Topic) Diskless() bool { return Diskless(t.Configs) }

// CheckDiskless refuses the configs a diskless topic cannot have, naming
// both configs; nil for a topic that is not diskless. r is
// Resolve(topicConfigs, ...), whose effective values it checks; the local
// retentions are refused when the topic sets them at all, since there is
// no local log for them to bound.
func CheckDiskless(topicConfigs map[string]string, r Resolved) error {
	if !r.Diskless {
		return nil
	}
	conflict := func(config, why string) error {
		return fmt.Errorf("%w: %s=true cannot be combined with %s: %s", ErrInvalidConfig, DisklessEnable, config, why)
	}
	if r.Compact {
		return conflict(CleanupPolicy+"="+r.CleanupPolicy, "compacted diskless topics are not supported")
	}
	if !r.RemoteStorage {
		return conflict(RemoteStorageEnable+"=false", "a diskless topic's older data lives only in the store, as tiered segments")
	}
	for _, k := range []string{LocalRetentionBytes, LocalRetentionMs} {
		if v, ok := topicConfigs[k]; ok {
			return conflict(k+"="+v, "a diskless topic has no local log")
		}
	}
	return nil
}

// CheckDisklessUnchanged refuses new configs of topic name that would
// change its mode from the stored configs': by setting diskless.enable to
// another value, deleting it or leaving it out of a whole replacement.
// Setting it to the value it has is no change.
func CheckDisklessUnchanged(name string, stored, next map[string]string) error {
	if was := Diskless(stored); was != Diskless(next) {
		return fmt.Errorf("%w: %s cannot be changed after creation (topic %s has %s=%t); create a new topic and copy the records",
			ErrInvalidConfig, DisklessEnable, name, DisklessEnable, was)
	}
	return nil
}
