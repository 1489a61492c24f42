package metadata

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ConfigType is a config's type. The values are Kafka's DescribeConfigs
// config_type codes, so the protocol layer can send them as they are.
type ConfigType int8

const (
	TypeUnknown ConfigType = 0
	TypeBoolean ConfigType = 1
	TypeString  ConfigType = 2
	TypeInt     ConfigType = 3
	TypeShort   ConfigType = 4
	TypeLong    ConfigType = 5
	TypeDouble  ConfigType = 6
	TypeList    ConfigType = 7
)

// ConfigDef describes one topic config Strata acts on.
type ConfigDef struct {
	Name    string
	Doc     string
	Type    ConfigType
	Default string
	// ReadOnly configs are given at creation and never change afterwards
	// (diskless.enable); DescribeConfigs shows them read-only.
	ReadOnly bool
	// validate checks a value already known to be of Type.
	validate func(string) error
}

// Validate reports whether value is acceptable for d, naming the key, the
// value and what is allowed.
func (d ConfigDef) Validate(value string) error {
	if err := d.validate(value); err != nil {
		return fmt.Errorf("%w: %s=%q: %v", ErrInvalidConfig, d.Name, value, err)
	}
	return nil
}

// Kafka's topic config names (org.apache.kafka.common.config.TopicConfig).
const (
	CleanupPolicy               = "cleanup.policy"
	CompressionType             = "compression.type"
	DeleteRetentionMs           = "delete.retention.ms"
	IndexIntervalBytes          = "index.interval.bytes"
	LocalRetentionBytes         = "local.retention.bytes"
	LocalRetentionMs            = "local.retention.ms"
	MaxCompactionLagMs          = "max.compaction.lag.ms"
	MaxMessageBytes             = "max.message.bytes"
	MessageTimestampAfterMaxMs  = "message.timestamp.after.max.ms"
	MessageTimestampBeforeMaxMs = "message.timestamp.before.max.ms"
	MessageTimestampType        = "message.timestamp.type"
	MinCleanableDirtyRatio      = "min.cleanable.dirty.ratio"
	MinCompactionLagMs          = "min.compaction.lag.ms"
	MinInsyncReplicas           = "min.insync.replicas"
	RemoteStorageEnable         = "remote.storage.enable"
	RetentionBytes              = "retention.bytes"
	RetentionMs                 = "retention.ms"
	SegmentBytes                = "segment.bytes"
	SegmentMs                   = "segment.ms"
	UncleanLeaderElectionEnable = "unclean.leader.election.enable"
)

// DisklessEnable makes a topic diskless (docs/design.md §7a). The name is
// KIP-1150's; Kafka has no such config yet. It is set at creation only and
// has no agent-level default (diskless.go).
const DisklessEnable = "diskless.enable"

// topicConfigDefs is the table, sorted by name. Defaults and ranges follow
// Kafka 4.0 except where a comment says otherwise.
var topicConfigDefs = []ConfigDef{
	{Name: CleanupPolicy, Type: TypeList, Default: "delete", validate: validateCleanupPolicy,
		Doc: "How old records are discarded: \"delete\" removes segments by retention time and size, \"compact\" keeps the latest record of each key; both may be listed."},
	{Name: CompressionType, Type: TypeString, Default: "producer",
		validate: oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
		Doc:      "Codec batches are stored with; \"producer\" keeps the producer's codec, any other value recompresses."},
	{Name: DeleteRetentionMs, Type: TypeLong, Default: "86400000", validate: intRange(0, math.MaxInt64),
		Doc: "Milliseconds a tombstone (a null value) stays readable on a compacted topic before the cleaner removes it."},
	{Name: DisklessEnable, Type: TypeBoolean, Default: "false", ReadOnly: true, validate: oneOf("true", "false"),
		Doc: "Whether the topic is diskless: its records go straight to the store, batched across partitions, and no agent keeps a local log or replicas of its partitions; given at creation only and never changed."},
	{Name: IndexIntervalBytes, Type: TypeInt, Default: "4096", validate: intRange(0, math.MaxInt32),
		Doc: "Bytes of log between two entries of the sparse offset index."},
	{Name: LocalRetentionBytes, Type: TypeLong, Default: "-2", validate: intRange(-2, math.MaxInt64),
		Doc: "Bytes of tiered data a partition keeps on local disk; -2 means use retention.bytes."},
	{Name: LocalRetentionMs, Type: TypeLong, Default: "-2", validate: intRange(-2, math.MaxInt64),
		Doc: "Milliseconds tiered data stays on local disk; -2 means use retention.ms."},
	{Name: MaxCompactionLagMs, Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), validate: intRange(1, math.MaxInt64),
		Doc: "Longest time, in milliseconds, a record stays uncompacted on a compacted topic, whatever the dirty ratio."},
	{Name: MaxMessageBytes, Type: TypeInt, Default: "1048588", validate: intRange(0, math.MaxInt32),
		Doc: "Largest record batch, in bytes, the topic accepts."},
	// Kafka 4.0 lowered the default from Long.MAX to one hour (KIP-937).
	{Name: MessageTimestampAfterMaxMs, Type: TypeLong, Default: "3600000", validate: intRange(0, math.MaxInt64),
		Doc: "How far, in milliseconds, a CreateTime timestamp may lie in the future before the batch is rejected."},
	{Name: MessageTimestampBeforeMaxMs, Type: TypeLong, Default: strconv.FormatInt(math.MaxInt64, 10), validate: intRange(0, math.MaxInt64),
		Doc: "How far, in milliseconds, a CreateTime timestamp may lie in the past before the batch is rejected."},
	{Name: MessageTimestampType, Type: TypeString, Default: "CreateTime", validate: oneOf("CreateTime", "LogAppendTime"),
		Doc: "Whether record timestamps are the producer's (CreateTime) or the leader's clock at append (LogAppendTime)."},
	{Name: MinCleanableDirtyRatio, Type: TypeDouble, Default: "0.5", validate: floatRange(0, 1),
		Doc: "Share of a compacted log that must be uncleaned before the cleaner cleans it."},
	{Name: MinCompactionLagMs, Type: TypeLong, Default: "0", validate: intRange(0, math.MaxInt64),
		Doc: "Shortest time, in milliseconds, a record stays uncompacted on a compacted topic."},
	{Name: MinInsyncReplicas, Type: TypeInt, Default: "1", validate: intRange(1, math.MaxInt32),
		Doc: "Fewest in-sync replicas for which a produce with acks=all succeeds."},
	// Kafka's default is false (tiering is opt-in there); Strata tiers
	// every topic unless told not to, with the local fs store too, except
	// compacted topics, which are tiered (and compacted in the bucket,
	// tiering/compact.go) only when the topic sets it (Resolve).
	{Name: RemoteStorageEnable, Type: TypeBoolean, Default: "true", validate: oneOf("true", "false"),
		Doc: "Whether sealed segments are uploaded to the store, so that local disk holds only local.retention.* of the log; a compacted topic is tiered only when it sets this to true, and is then compacted in the store too."},
	// Kafka accepts any long and treats every negative value as unlimited;
	// Strata accepts only -1 for unlimited so that a typo is caught.
	{Name: RetentionBytes, Type: TypeLong, Default: "-1", validate: intRange(-1, math.MaxInt64),
		Doc: "Bytes a partition keeps before deleting its oldest segments; -1 means no size limit."},
	{Name: RetentionMs, Type: TypeLong, Default: "604800000", validate: intRange(-1, math.MaxInt64),
		Doc: "Milliseconds a segment is kept after its newest record; -1 means forever."},
	// Kafka 4.0 raised the minimum to 1 MiB; Strata keeps Kafka 3's 14 bytes
	// (one legacy record's overhead) so tests can roll segments quickly.
	{Name: SegmentBytes, Type: TypeInt, Default: "1073741824", validate: intRange(14, math.MaxInt32),
		Doc: "Size in bytes at which the active segment is sealed and a new one started."},
	{Name: SegmentMs, Type: TypeLong, Default: "604800000", validate: intRange(1, math.MaxInt64),
		Doc: "Age in milliseconds at which the active segment is sealed even if it is not full."},
	{Name: UncleanLeaderElectionEnable, Type: TypeBoolean, Default: "false", validate: oneOf("true", "false"),
		Doc: "Whether a replica outside the ISR may lead when no in-sync replica is alive, accepting the loss of records it lacks."},
}

// TopicConfigDefs returns the table of topic configs, sorted by name. The
// slice is a copy.
func TopicConfigDefs() []ConfigDef { return slices.Clone(topicConfigDefs) }

// LookupTopicConfig returns the definition of name.
func LookupTopicConfig(name string) (ConfigDef, bool) {
	i, ok := slices.BinarySearchFunc(topicConfigDefs, name, func(d ConfigDef, n string) int { return strings.Compare(d.Name, n) })
	if !ok {
		return ConfigDef{}, false
	}
	return topicConfigDefs[i], true
}

// ValidateTopicConfigs checks every key and value. The first problem, in
// key order, is returned: an unknown key, or a bad value with the range
// allowed.
func ValidateTopicConfigs(configs map[string]string) error {
	keys := make([]string, 0, len(configs))
	for k := range configs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		d, ok := LookupTopicConfig(k)
		if !ok {
			return fmt.Errorf("%w: unknown topic config %q", ErrInvalidConfig, k)
		}
		if err := d.Validate(configs[k]); err != nil {
			return err
		}
	}
	return nil
}

func validateCleanupPolicy(v string) error {
	for item := range strings.SplitSeq(v, ",") {
		switch strings.TrimSpace(item) {
		case "delete", "compact":
		default:
			return fmt.Errorf("allowed values: delete, compact, or both separated by a comma")
		}
	}
	return nil
}

// HasCompact reports whether a cleanup.policy value lists compact.
func HasCompact(policy string) bool { return hasPolicy(policy, "compact") }

func hasPolicy(policy, want string) bool {
	for item := range strings.SplitSeq(policy, ",") {
		if strings.TrimSpace(item) == want {
			return true
		}
	}
	return false
}

// floatRange accepts a decimal number in [lo, hi].
func floatRange(lo, hi float64) func(string) error {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < lo || f > hi {
			return fmt.Errorf("must be a number in [%v, %v]", lo, hi)
		}
		return nil
	}
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("allowed values: %s", strings.Join(values, ", "))
	}
}

// intRange accepts a base-10 integer in [lo, hi], surrounding spaces
// allowed as in Kafka.
func intRange(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer in [%d, %d]", lo, hi)
		}
		return nil
	}
}
