package cleaner

// Remote compaction's place in the cleaner (docs/design.md §7, "Tiered
// compaction"): the cleaner goroutine (cleaner.go), after cleaning local
// logs, has the partitions it leads of compacted, tiered topics compact
// their bucket part (tiering/compact.go). It shares the cleaner's offset
// map and I/O throttle, so an agent's cleaning memory stays one
// --log-cleaner-dedupe-buffer-size however many partitions it has. Only the
// leader compacts the bucket (the manifest swap is fenced by its epoch);
// every replica still cleans its own local log.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/tiering"
)

// compactRemote runs one remote compaction pass on each partition that
// leads a compacted, tiered topic and whose bucket part is dirty enough,
// and reports whether any pass swapped objects in. It allocates the
// cleaner's map *m if no local clean has yet.
func (c *Cleaner) compactRemote(ctx context.Context, m **log.OffsetMap, th *log.Throttle) bool {
	compacted := false
	for _, p := range c.host.Partitions() {
		if ctx.Err() != nil {
			return compacted
		}
		remote := p.Remote()
		if remote == nil || !p.Leading() {
			continue
		}
		r, ok := c.host.Resolved(p.Topic())
		if !ok || !r.Compact || !r.RemoteStorage {
			continue
		}
		if *m == nil {
			*m = log.NewOffsetMap(int(c.cfg.DedupeBufferSize))
		}
		if c.compactRemotePartition(ctx, p, remote, r, *m, th) {
			compacted = true
		}
	}
	return compacted
}

// compactRemotePartition runs one pass on p and reports whether it
// swapped objects in.
func (c *Cleaner) compactRemotePartition(ctx context.Context, p *partition.Partition, remote *tiering.Partition,
	r metadata.Resolved, m *log.OffsetMap, th *log.Throttle) bool {
	dir := c.remoteCompactionDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.logger.Error("remote compaction", "dir", dir, "err", err)
		return false
	}
	interval := int(r.IndexIntervalBytes)
	now := time.Now()
	res, err := remote.Compact(ctx, tiering.CompactOptions{
		Now:                    now,
		LastStable:             p.LastStableOffset(),
		MinCleanableDirtyRatio: r.MinCleanableDirtyRatio,
		MinCompactionLagMs:     r.MinCompactionLagMs,
		MaxCompactionLagMs:     maxCompactionLagMs(r.MaxCompactionLagMs),
		DeleteRetentionMs:      r.DeleteRetentionMs,
		SegmentBytes:           r.SegmentBytes,
		TempDir:                dir,
		NewRules: func(aborted []txnindex.Entry) tiering.Rules {
			return log.NewBatchCleaner(m, log.RemotePass{Now: now,
				DeleteRetention: metadata.Millis(r.DeleteRetentionMs), Aborted: aborted})
		},
		NewSegment: func(base int64) tiering.SegmentBuilder { return log.NewSegmentBuilder(base, interval) },
		Pace:       th.Wait,
	})
	c.metrics.read.Add(float64(res.BytesRead))
	c.metrics.written.Add(float64(res.BytesWritten))
	switch {
	case errors.Is(err, context.Canceled):
	case errors.Is(err, tiering.ErrFenced):
		c.logger.Info("remote compaction fenced: no longer the leader", "topic", p.Topic(), "partition", p.Index())
	case err != nil:
		c.metrics.errors.Inc()
		c.logger.Error("remote compaction", "topic", p.Topic(), "partition", p.Index(), "err", err)
	}
	return err == nil && res.ObjectsBefore > 0
}

// remoteCompactionDir holds the downloads of the pass in progress.
func (c *Cleaner) remoteCompactionDir() string {
	return filepath.Join(c.dataDir, "remote-compaction")
}

// removeRemoteCompactionLeftovers deletes what passes cut short by a crash
// left in remoteCompactionDir; the cleaner calls it before its first pass.
func (c *Cleaner) removeRemoteCompactionLeftovers() {
	if err := os.RemoveAll(c.remoteCompactionDir()); err != nil {
		c.logger.Warn("remove remote compaction leftovers", "err", err)
	}
}

// maxCompactionLagMs is max.compaction.lag.ms for a pass, 0 for Kafka's
// default Long.MAX (never overdue), as logConfig does for the local log.
func maxCompactionLagMs(ms int64) int64 {
	if ms > metadata.MaxDurationMs {
		return 0
	}
	return ms
}
