package diskless

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/internal/bytesize"
)

// DefaultServiceConfig is the design's defaults (docs/design.md §7a,
// "Flags and metrics").
func DefaultServiceConfig() ServiceConfig {
	return ServiceConfig{Writer: DefaultConfig(), StatePartitions: 50,
		ChunkBytes: 1 << 20, CacheBytes: 64 << 20, IndexPoll: time.Second, CompactionMaxLag: 10 * time.Minute}
}

// RegisterFlags adds the data path's flags to fs, with c's values as the
// defaults.
func (c *ServiceConfig) RegisterFlags(fs *pflag.FlagSet) {
	c.Writer.RegisterFlags(fs)
	fs.Int32Var(&c.StatePartitions, "diskless-state-partitions", c.StatePartitions, "Partitions of __diskless_state, the diskless batch coordinators' topic, when it is created.")
	fs.Var(bytesize.NewFlag(&c.CacheBytes), "diskless-cache-bytes", "Memory for diskless commit objects read or written here, each kept whole: readers of a partition produced through this agent read without a GET.")
	fs.DurationVar(&c.IndexPoll, "diskless-index-poll", c.IndexPoll, "Longest wait of one long-polled index request this agent keeps open to each batch coordinator whose partitions it serves to readers.")
	fs.DurationVar(&c.CompactionMaxLag, "diskless-compaction-max-lag", c.CompactionMaxLag, "Age of a diskless partition's oldest batch not yet compacted at which object compaction moves its batches into a tiered segment short of segment.bytes.")
}

// Validate names the first bad setting by its flag.
func (c ServiceConfig) Validate() error {
	if err := c.Writer.Validate(); err != nil {
		return err
	}
	switch {
	case c.StatePartitions < 1 || c.StatePartitions > 1000:
		return fmt.Errorf("--diskless-state-partitions %d: must be in [1, 1000]", c.StatePartitions)
	case c.CacheBytes < c.Writer.CommitBytes:
		return fmt.Errorf("--diskless-cache-bytes %d: must hold at least one object (--diskless-commit-bytes %d)", c.CacheBytes, c.Writer.CommitBytes)
	case c.IndexPoll < 10*time.Millisecond || c.IndexPoll > 10*time.Second:
		return fmt.Errorf("--diskless-index-poll %v: must be in [10ms, 10s]", c.IndexPoll)
	case c.CompactionMaxLag <= 0:
		return fmt.Errorf("--diskless-compaction-max-lag %v: must be positive", c.CompactionMaxLag)
	}
	return nil
}
