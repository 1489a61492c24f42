package topics

import (
	"strconv"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
)

// TestLogConfig: the effective topic configs become the log's, with
// Kafka's out-of-range millisecond values meaning "never" or "forever",
// tiny segments raised to one batch header, tombstones kept locally on a
// tiered compacted topic, and the agent's fsync settings passed through.
func TestLogConfig(t *testing.T) {
	never := metadata.MaxDurationMs + 1 // past ~292 years: overflows a Duration
	for _, c := range []struct {
		name    string
		configs map[string]string
		check   func(log.Config) (got, want any)
	}{
		{"segment.bytes below a batch header is raised", map[string]string{metadata.SegmentBytes: "14"},
			func(c log.Config) (any, any) { return c.SegmentBytes, int64(61) }},
		{"segment.bytes as set", map[string]string{metadata.SegmentBytes: "4096"},
			func(c log.Config) (any, any) { return c.SegmentBytes, int64(4096) }},
		{"segment.ms past a Duration never rolls", map[string]string{metadata.SegmentMs: ms(never)},
			func(c log.Config) (any, any) { return c.SegmentMs, time.Duration(0) }},
		{"segment.ms as set", map[string]string{metadata.SegmentMs: "60000"},
			func(c log.Config) (any, any) { return c.SegmentMs, time.Minute }},
		{"retention.ms -1 is forever", map[string]string{metadata.RetentionMs: "-1"},
			func(c log.Config) (any, any) { return c.RetentionMs, time.Duration(-1) }},
		{"retention.ms past a Duration is forever", map[string]string{metadata.RetentionMs: ms(never)},
			func(c log.Config) (any, any) { return c.RetentionMs, time.Duration(-1) }},
		{"retention.ms as set", map[string]string{metadata.RetentionMs: "3600000"},
			func(c log.Config) (any, any) { return c.RetentionMs, time.Hour }},
		{"local.retention.ms as set on a tiered topic", map[string]string{metadata.RemoteStorageEnable: "true", metadata.LocalRetentionMs: "60000"},
			func(c log.Config) (any, any) { return c.LocalRetentionMs, time.Minute }},
		{"local.retention.ms past a Duration is forever", map[string]string{metadata.RetentionMs: "-1", metadata.LocalRetentionMs: ms(never)},
			func(c log.Config) (any, any) { return c.LocalRetentionMs, time.Duration(-1) }},
		{"an untiered compacted topic drops tombstones after delete.retention.ms",
			map[string]string{metadata.CleanupPolicy: "compact", metadata.DeleteRetentionMs: "1000", metadata.RemoteStorageEnable: "false"},
			func(c log.Config) (any, any) { return c.DeleteRetention, time.Second }},
		{"a tiered compacted topic keeps tombstones locally",
			map[string]string{metadata.CleanupPolicy: "compact", metadata.DeleteRetentionMs: "1000", metadata.RemoteStorageEnable: "true"},
			func(c log.Config) (any, any) {
				return c.DeleteRetention, time.Duration(metadata.MaxDurationMs) * time.Millisecond
			}},
		{"max.compaction.lag.ms past a Duration is never overdue", map[string]string{metadata.MaxCompactionLagMs: ms(never)},
			func(c log.Config) (any, any) { return c.MaxCompactionLag, time.Duration(0) }},
		{"cleanup.policy compact,delete", map[string]string{metadata.CleanupPolicy: "compact,delete"},
			func(c log.Config) (any, any) { return [2]bool{c.Compact, c.Delete}, [2]bool{true, true} }},
		{"the agent's fsync policy", nil,
			func(c log.Config) (any, any) {
				return [2]any{c.Flush, c.FlushInterval}, [2]any{log.FlushInterval, 3 * time.Second}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := metadata.Resolve(c.configs, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, want := c.check(LogConfig(r, log.FlushInterval, 3*time.Second))
			if got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func ms(v int64) string { return strconv.FormatInt(v, 10) }
