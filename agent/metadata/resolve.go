package metadata

import (
	"fmt"
	"strconv"
	"strings"
)

// Defaults are agent-level overrides of topic config defaults (from flags
// such as --log-retention-ms), keyed by the topic config name.
type Defaults map[string]string

// Validate checks every key and value, saying that the problem is in the
// agent defaults. diskless.enable is refused: it has no agent-level
// default (diskless.go).
func (d Defaults) Validate() error {
	if err := ValidateTopicConfigs(d); err != nil {
		return fmt.Errorf("agent default: %w", err)
	}
	if _, ok := d[DisklessEnable]; ok {
		return fmt.Errorf("agent default: %w: %s cannot have an agent-level default: a default that changed later would change the mode of every topic created without the key; set it on the topic when creating it",
			ErrInvalidConfig, DisklessEnable)
	}
	return nil
}

// ConfigSource says where an effective value came from. The values are
// Kafka's DescribeConfigs config_source codes.
type ConfigSource int8

const (
	SourceUnknown      ConfigSource = 0
	SourceDynamicTopic ConfigSource = 1 // set on the topic (DYNAMIC_TOPIC_CONFIG)
	SourceDefaultAgent ConfigSource = 4 // agent setting (STATIC_BROKER_CONFIG)
	SourceDefault      ConfigSource = 5 // built-in default (DEFAULT_CONFIG)
)

func (s ConfigSource) String() string {
	switch s {
	case SourceDynamicTopic:
		return "DYNAMIC_TOPIC_CONFIG"
	case SourceDefaultAgent:
		return "STATIC_BROKER_CONFIG"
	case SourceDefault:
		return "DEFAULT_CONFIG"
	}
	return "UNKNOWN"
}

// Resolved is a topic's effective configuration, parsed.
type Resolved struct {
	CleanupPolicy string // as set: "delete", "compact" or both
	// Compact and Delete are the two cleanup policies.
	Compact, Delete bool
	// The compaction settings, in milliseconds (-> agent/log.Config).
	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MinCleanableDirtyRatio float64
	CompressionType        string
	MaxMessageBytes        int32
	TimestampType          string // "CreateTime" or "LogAppendTime"
	TimestampBeforeMaxMs   int64
	TimestampAfterMaxMs    int64
	MinInsyncReplicas      int32
	RemoteStorage          bool
	RetentionBytes         int64 // -1: no limit
	RetentionMs            int64 // -1: forever
	// LocalRetentionBytes and LocalRetentionMs are effective values: -2 is
	// replaced by the total retention, and a local retention above a finite
	// total retention is capped at it (Kafka rejects that combination; a
	// resolved config must never fail, so Strata caps).
	LocalRetentionBytes int64
	LocalRetentionMs    int64
	SegmentBytes        int64
	SegmentMs           int64
	IndexIntervalBytes  int32
	// UncleanLeaderElection lets a replica outside the ISR lead.
	UncleanLeaderElection bool
	// Diskless is diskless.enable: the topic's partitions have no local
	// log, no replicas and no state.json (docs/design.md §7a).
	Diskless bool
}

// effective returns the value of d and its source.
func effective(d ConfigDef, topicConfigs map[string]string, defaults Defaults) (string, ConfigSource) {
	if v, ok := topicConfigs[d.Name]; ok {
		return v, SourceDynamicTopic
	}
	if v, ok := defaults[d.Name]; ok {
		return v, SourceDefaultAgent
	}
	return d.Default, SourceDefault
}

// Resolve combines a topic's own configs with the agent defaults and the
// built-in defaults, validating all of them.
func Resolve(topicConfigs map[string]string, defaults Defaults) (Resolved, error) {
	if err := ValidateTopicConfigs(topicConfigs); err != nil {
		return Resolved{}, err
	}
	if err := defaults.Validate(); err != nil {
		return Resolved{}, err
	}
	value := func(name string) string {
		d, ok := LookupTopicConfig(name)
		if !ok {
			panic("metadata: Resolve reads unknown config " + name) // table and code disagree: a bug
		}
		v, _ := effective(d, topicConfigs, defaults)
		return strings.TrimSpace(v)
	}
	// Every value below passed its validator, so parsing cannot fail and
	// fits the declared width.
	long := func(name string) int64 {
		n, err := strconv.ParseInt(value(name), 10, 64)
		if err != nil {
			panic("metadata: validated config " + name + " does not parse: " + err.Error())
		}
		return n
	}
	ratio, err := strconv.ParseFloat(value(MinCleanableDirtyRatio), 64)
	if err != nil {
		panic("metadata: validated config " + MinCleanableDirtyRatio + " does not parse: " + err.Error())
	}
	r := Resolved{
		CleanupPolicy:          value(CleanupPolicy),
		Compact:                HasCompact(value(CleanupPolicy)),
		Delete:                 hasPolicy(value(CleanupPolicy), "delete"),
		DeleteRetentionMs:      long(DeleteRetentionMs),
		MinCompactionLagMs:     long(MinCompactionLagMs),
		MaxCompactionLagMs:     long(MaxCompactionLagMs),
		MinCleanableDirtyRatio: ratio,
		CompressionType:        value(CompressionType),
		MaxMessageBytes:        int32(long(MaxMessageBytes)),
		TimestampType:          value(MessageTimestampType),
		TimestampBeforeMaxMs:   long(MessageTimestampBeforeMaxMs),
		TimestampAfterMaxMs:    long(MessageTimestampAfterMaxMs),
		MinInsyncReplicas:      int32(long(MinInsyncReplicas)),
		RemoteStorage:          strings.EqualFold(value(RemoteStorageEnable), "true"),
		RetentionBytes:         long(RetentionBytes),
		RetentionMs:            long(RetentionMs),
		LocalRetentionBytes:    long(LocalRetentionBytes),
		LocalRetentionMs:       long(LocalRetentionMs),
		SegmentBytes:           long(SegmentBytes),
		SegmentMs:              long(SegmentMs),
		IndexIntervalBytes:     int32(long(IndexIntervalBytes)),
		UncleanLeaderElection:  strings.EqualFold(value(UncleanLeaderElectionEnable), "true"),
		Diskless:               Diskless(topicConfigs),
	}
	if r.Compact {
		r.RemoteStorage = compactTiered(topicConfigs)
	}
	r.LocalRetentionBytes = localRetention(r.LocalRetentionBytes, r.RetentionBytes)
	r.LocalRetentionMs = localRetention(r.LocalRetentionMs, r.RetentionMs)
	return r, nil
}

// localRetention applies -2 ("same as total") and caps local at a finite
// total.
func localRetention(local, total int64) int64 {
	if local == -2 {
		return total
	}
	if total >= 0 && (local < 0 || local > total) {
		return total
	}
	return local
}

// ConfigEntry is one row of Describe.
type ConfigEntry struct {
	Name   string
	Value  string
	Source ConfigSource
	Doc    string
	Type   ConfigType
	// ReadOnly is ConfigDef.ReadOnly: the config cannot be altered.
	ReadOnly bool
}

// compactTiered reports whether a compacted topic is tiered: only when the
// topic itself sets remote.storage.enable=true. Strata's default tiers
// every topic, but a compacted topic tiers, and is compacted in the store
// (tiering/compact.go), only on request, as in Kafka where tiering is
// opt-in: the internal topics (__consumer_offsets, __transaction_state)
// and compacted topics created before tiered compaction stay local.
func compactTiered(topicConfigs map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(topicConfigs[RemoteStorageEnable]), "true")
}

// Describe lists every known topic config, sorted by name, with its
// effective value and where it came from, for DescribeConfigs. Values are
// reported as stored, not validated; keys the table does not know are
// left out.
func Describe(topicConfigs map[string]string, defaults Defaults) []ConfigEntry {
	out := make([]ConfigEntry, 0, len(topicConfigDefs))
	compact := false
	if d, ok := LookupTopicConfig(CleanupPolicy); ok {
		v, _ := effective(d, topicConfigs, defaults)
		compact = HasCompact(v)
	}
	for _, d := range topicConfigDefs {
		v, src := effective(d, topicConfigs, defaults)
		if d.Name == RemoteStorageEnable && compact && !compactTiered(topicConfigs) {
			v = "false" // what Resolve makes of it: see compactTiered
		}
		out = append(out, ConfigEntry{Name: d.Name, Value: v, Source: src, Doc: d.Doc, Type: d.Type, ReadOnly: d.ReadOnly})
	}
	return out
}
