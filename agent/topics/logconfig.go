package topics

import (
	"time"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
)

// LogConfig turns a topic's effective configs into a partition log config
// under the agent's fsync policy (--log-flush, --log-flush-interval).
func LogConfig(r metadata.Resolved, flush log.FlushPolicy, flushInterval time.Duration) log.Config {
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
	c.Flush = flush
	c.FlushInterval = flushInterval
	return c
}

// logConfig is LogConfig under the table's fsync settings.
func (t *Table) logConfig(r metadata.Resolved) log.Config {
	return LogConfig(r, t.cfg.Flush, t.cfg.FlushInterval)
}
