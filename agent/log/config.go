package log

import (
	"fmt"
	"math"
	"time"
)

// FlushPolicy says when appended bytes are fsynced (setting log.flush).
type FlushPolicy int

const (
	// FlushAlways: Append returns after an fsync that covers its bytes;
	// concurrent appends share fsyncs (group commit).
	FlushAlways FlushPolicy = iota
	// FlushInterval: an owned goroutine fsyncs every Config.FlushInterval.
	FlushInterval
	// FlushNever: fsync only at segment roll, Sync and Close.
	FlushNever
)

func (p FlushPolicy) String() string {
	switch p {
	case FlushAlways:
		return "always"
	case FlushInterval:
		return "interval"
	case FlushNever:
		return "never"
	}
	return fmt.Sprintf("FlushPolicy(%d)", int(p))
}

// ParseFlushPolicy parses "always", "interval" or "never".
func ParseFlushPolicy(s string) (FlushPolicy, error) {
	for p := FlushAlways; p <= FlushNever; p++ {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: log.flush %q: want always, interval or never", ErrInvalidConfig, s)
}

// Config holds one partition log's settings, named as Kafka's topic
// settings where one exists.
type Config struct {
	// SegmentBytes (segment.bytes): roll when the active segment would
	// exceed this. At most 2 GiB-1, since index positions are 32-bit.
	SegmentBytes int64
	// SegmentMs (segment.ms): roll when the incoming batch's max timestamp
	// is this much newer than the active segment's first batch's (Kafka's
	// rule, which ignores wall-clock time so that producers with skewed
	// clocks do not roll every batch); 0 = never.
	SegmentMs time.Duration
	// RetentionBytes (retention.bytes); -1 = unlimited.
	RetentionBytes int64
	// RetentionMs (retention.ms); negative = keep forever.
	RetentionMs time.Duration
	// IndexIntervalBytes (index.interval.bytes): one sparse index entry per
	// this many bytes of batches; 0 = an entry for every batch.
	IndexIntervalBytes int
	// Flush is the fsync policy (log.flush).
	Flush FlushPolicy
	// FlushInterval is how often FlushInterval syncs (log.flush.interval.ms).
	FlushInterval time.Duration
	// ProducerIDExpiration (producer.id.expiration.ms): idempotence state
	// of a producer whose last batch timestamp is older than this is
	// dropped at segment rolls and retention; 0 = never.
	ProducerIDExpiration time.Duration
	// Remote (remote.storage.enable): sealed segments are uploaded, and
	// ApplyRetention deletes only those wholly below the remote end
	// (SetRemoteEnd), by LocalRetentionMs and LocalRetentionBytes
	// (local.retention.*); the total retention is then the tiering
	// layer's to apply, to the bucket and through DeleteRecordsBefore.
	Remote              bool
	LocalRetentionMs    time.Duration // negative: forever
	LocalRetentionBytes int64         // -1: no limit

	// Delete and Compact are cleanup.policy: Delete lets ApplyRetention
	// delete segments by retention.ms and retention.bytes; Compact lets
	// the cleaner (clean.go) keep only the latest record of each key.
	// "compact" alone keeps the log whole by time and size, as in Kafka.
	Delete, Compact bool
	// The compaction settings (used only with Compact), as Kafka's.
	DeleteRetention        time.Duration // delete.retention.ms: how long tombstones stay readable
	MinCompactionLag       time.Duration // min.compaction.lag.ms: records younger are not compacted
	MaxCompactionLag       time.Duration // max.compaction.lag.ms: dirty records older are compacted whatever the ratio; 0 = never
	MinCleanableDirtyRatio float64       // min.cleanable.dirty.ratio
}

// Defaults, as Apache Kafka's.
const (
	DefaultSegmentBytes         = 1 << 30
	DefaultSegmentMs            = 7 * 24 * time.Hour
	DefaultRetentionMs          = 7 * 24 * time.Hour
	DefaultIndexIntervalBytes   = 4096
	DefaultFlushInterval        = time.Second
	DefaultProducerIDExpiration = 24 * time.Hour
	DefaultDeleteRetention      = 24 * time.Hour
	DefaultMinCleanableRatio    = 0.5

	// maxSegmentBytes keeps file positions within the u32 of the index.
	maxSegmentBytes = math.MaxInt32
	// minSegmentBytes is one batch header: smaller segments cannot hold data.
	minSegmentBytes = 61
)

// DefaultConfig is Kafka's defaults with log.flush=always.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           DefaultSegmentBytes,
		SegmentMs:              DefaultSegmentMs,
		RetentionBytes:         -1,
		RetentionMs:            DefaultRetentionMs,
		IndexIntervalBytes:     DefaultIndexIntervalBytes,
		Flush:                  FlushAlways,
		FlushInterval:          DefaultFlushInterval,
		ProducerIDExpiration:   DefaultProducerIDExpiration,
		LocalRetentionMs:       DefaultRetentionMs,
		LocalRetentionBytes:    -1,
		Delete:                 true,
		DeleteRetention:        DefaultDeleteRetention,
		MinCleanableDirtyRatio: DefaultMinCleanableRatio,
	}
}

// Validate reports the first bad field by its Kafka name.
func (c Config) Validate() error {
	switch {
	case c.SegmentBytes < minSegmentBytes || c.SegmentBytes > maxSegmentBytes:
		return fmt.Errorf("%w: segment.bytes %d not in [%d, %d]", ErrInvalidConfig, c.SegmentBytes, minSegmentBytes, maxSegmentBytes)
	case c.SegmentMs < 0:
		return fmt.Errorf("%w: segment.ms %v is negative", ErrInvalidConfig, c.SegmentMs)
	case c.RetentionBytes < -1:
		return fmt.Errorf("%w: retention.bytes %d below -1", ErrInvalidConfig, c.RetentionBytes)
	case c.LocalRetentionBytes < -1:
		return fmt.Errorf("%w: local.retention.bytes %d below -1", ErrInvalidConfig, c.LocalRetentionBytes)
	case c.IndexIntervalBytes < 0:
		return fmt.Errorf("%w: index.interval.bytes %d is negative", ErrInvalidConfig, c.IndexIntervalBytes)
	case c.Flush < FlushAlways || c.Flush > FlushNever:
		return fmt.Errorf("%w: log.flush %v", ErrInvalidConfig, c.Flush)
	case c.Flush == FlushInterval && c.FlushInterval <= 0:
		return fmt.Errorf("%w: log.flush.interval.ms %v must be positive with log.flush=interval", ErrInvalidConfig, c.FlushInterval)
	case c.DeleteRetention < 0 || c.MinCompactionLag < 0 || c.MaxCompactionLag < 0:
		return fmt.Errorf("%w: delete.retention.ms, min.compaction.lag.ms and max.compaction.lag.ms must not be negative", ErrInvalidConfig)
	case c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1:
		return fmt.Errorf("%w: min.cleanable.dirty.ratio %v not in [0, 1]", ErrInvalidConfig, c.MinCleanableDirtyRatio)
	case c.ProducerIDExpiration < 0:
		return fmt.Errorf("%w: producer.id.expiration.ms %v is negative", ErrInvalidConfig, c.ProducerIDExpiration)
	}
	return nil
}
