package agent

// Tiering wiring (docs/design.md §7): one tiering.Tierer per agent uploads the
// sealed segments of every partition with remote.storage.enable and serves
// reads below the local logs; retention applies to the bucket too, and an
// orphan janitor runs with it.

import (
	"context"
	"errors"
	"time"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/tiering"
)

// openTiering makes the agent's Tierer; it runs once the agent runs.
func (a *Agent) openTiering() error {
	t, err := tiering.New(a.bucket, a.cfg.Tiering, tiering.NewMetrics(a.registry), a.logger.With("component", "tiering"))
	if err != nil {
		return err
	}
	a.tier = t
	a.registry.MustRegister(t.Collector())
	return nil
}

// enableTiering starts tiering a partition whose topic turned
// remote.storage.enable on, then lets its log defer deletions to uploads.
// A failure is retried by the retention loop.
func (a *Agent) enableTiering(ctx context.Context, p *partition.Partition, r metadata.Resolved) error {
	if p.Remote() == nil {
		if err := p.OpenTiering(ctx, a.tier); err != nil {
			return err
		}
	}
	return p.LocalLog().SetConfig(a.logConfig(r))
}

// runTiering uploads until the agent stops.
func (a *Agent) runTiering() {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-a.stop
		cancel()
	}()
	a.tier.Run(ctx)
}

// openTieringTimeout bounds a retried start of a partition's tiering.
const openTieringTimeout = time.Minute

// applyRemoteRetention applies retention.* to the bucket's part of p and
// deletes orphan objects older than --orphan-grace.
func (a *Agent) applyRemoteRetention(ctx context.Context, p *partition.Partition) {
	e, ok := a.entry(p.Topic())
	if !ok || !e.Snap.Resolved.RemoteStorage {
		return
	}
	r := e.Snap.Resolved
	if p.Remote() == nil {
		// Bounded: a store that hangs must not hold up the retention of
		// the partitions after this one.
		octx, cancel := context.WithTimeout(ctx, openTieringTimeout)
		err := a.enableTiering(octx, p, r)
		cancel()
		if err != nil {
			a.logger.Warn("start tiering", "topic", p.Topic(), "partition", p.Index(), "err", err)
			return
		}
	}
	remote := p.Remote()
	retentionMs, retentionBytes := r.RetentionMs, r.RetentionBytes
	if !r.Delete {
		// cleanup.policy=compact: the cleaner, not age or size, bounds the
		// log, in the bucket as on disk (Kafka's rule); a compacted object
		// holding only old or emptied batches must not take the log's
		// start with it.
		retentionMs, retentionBytes = -1, -1
	}
	n, err := remote.ApplyRetention(ctx, time.Now(), retentionMs, retentionBytes)
	switch {
	case errors.Is(err, log.ErrClosed):
		return
	case err != nil:
		a.logger.Error("remote retention", "topic", p.Topic(), "partition", p.Index(), "err", err)
	case n > 0:
		a.logger.Info("remote retention deleted segments", "topic", p.Topic(), "partition", p.Index(), "segments", n)
	}
	if p.Leading() {
		if _, err := remote.CleanOrphans(ctx, time.Now()); err != nil {
			a.logger.Warn("orphan cleanup", "topic", p.Topic(), "partition", p.Index(), "err", err)
		}
	}
}
