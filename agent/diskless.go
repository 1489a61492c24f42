package agent

// The diskless data path (agent/diskless): its write buffer, its commits
// to the batch coordinators and its reads, over a pool of inter-agent
// connections of its own, so that the index follower's long polls never
// hold up transaction markers.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/diskless"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/peer"
)

// openDiskless starts the data path; it needs the coordinators, the
// controller and the bucket.
func (a *Agent) openDiskless() error {
	cfg := peer.DefaultPoolConfig()
	cfg.Name, cfg.Self, cfg.Options = "diskless", a.id, a.peer
	cfg.IdleTimeout = min(cfg.IdleTimeout, a.cfg.Kafka.IdleTimeout/2)
	pool, err := peer.NewPool(cfg, a.registry)
	if err != nil {
		return err
	}
	a.disklessPeers = pool
	dcfg := a.cfg.Diskless
	dcfg.StagingDir = filepath.Join(a.cfg.DataDir, "diskless-compaction")
	a.diskless, err = diskless.NewService(dcfg, a.id, disklessHost{a}, a.bucket, a.tier, pool, a.registry, a.logger.With("component", "diskless"))
	if err != nil {
		return err
	}
	// The writer's per-topic counters (the console's cost model) name
	// topics as every other metric does. The table's lock is a leaf, so
	// the lookup may run under the writer's.
	a.diskless.Writer().NameTopics(func(id [16]byte) (string, bool) {
		t, ok := a.topics.TopicByID(id)
		if !ok {
			return "", false
		}
		return t.Name, true
	})
	return nil
}

// disklessHost implements diskless.Host.
type disklessHost struct{ a *Agent }

var _ diskless.Host = disklessHost{}

func (h disklessHost) Coordinator(ctx context.Context, topicID [16]byte, p int32) (diskless.Coord, error) {
	leader, epoch, err := h.a.coords.DisklessLeader(ctx, topicID, p)
	if err != nil {
		return diskless.Coord{}, err
	}
	addr, err := h.a.ctl.AgentAddr(ctx, leader)
	if err != nil {
		return diskless.Coord{}, fmt.Errorf("batch coordinator on agent %d: %w", leader, err)
	}
	return diskless.Coord{Agent: leader, Addr: addr, Epoch: epoch}, nil
}

func (h disklessHost) CoordinatorEpoch(ctx context.Context, topicID [16]byte, p int32) (int32, error) {
	_, epoch, err := h.a.coords.DisklessLeader(ctx, topicID, p)
	return epoch, err
}

func (h disklessHost) DataChanged() { h.a.signal.Notify() }

// disklessTable is the data path as the topic table opens diskless
// partitions through it (topics.DisklessPartitions); the table is built
// before the data path, which it reaches only once topics load.
type disklessTable struct{ a *Agent }

func (d disklessTable) OpenDiskless(ctx context.Context, t metadata.Topic, r metadata.Resolved, first int32) ([]dataplane.Partition, error) {
	return d.a.diskless.OpenDiskless(ctx, t, r, first)
}

func (h disklessHost) CoordinatorAgents(ctx context.Context) ([]diskless.Coord, bool, error) {
	ids, complete := h.a.coords.DisklessCoordinatorAgents()
	out := make([]diskless.Coord, 0, len(ids))
	for _, id := range ids {
		addr, err := h.a.ctl.AgentAddr(ctx, id)
		if err != nil {
			return nil, false, fmt.Errorf("batch coordinator on agent %d: %w", id, err)
		}
		out = append(out, diskless.Coord{Agent: id, Addr: addr})
	}
	return out, complete, nil
}

// disklessCompactionLoop runs object compaction each second over the
// partitions of the batch coordinators loaded here.
func (a *Agent) disklessCompactionLoop() {
	a.every(time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		a.diskless.CompactOnce(ctx, a.coords.LoadedDiskless(), a.topics.TopicByID)
	})
}

// disklessJanitorLoop runs the orphan janitor's diskless pass every half
// --orphan-grace on one agent: the one with the lowest id among those
// that lead __diskless_state's partitions, which every agent works out
// alike (two passes at once would only delete the same orphans twice).
func (a *Agent) disklessJanitorLoop() {
	a.every(a.cfg.Tiering.OrphanGrace/2, func() {
		ids, _ := a.coords.DisklessCoordinatorAgents()
		if len(ids) == 0 || slices.Min(ids) != a.id {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.Tiering.OrphanGrace/2)
		defer cancel()
		n, err := a.diskless.CollectOrphans(ctx, a.cfg.Tiering.OrphanGrace)
		switch {
		case err != nil:
			a.logger.Warn("diskless orphan pass", "deleted", n, "err", err)
		case n > 0:
			a.logger.Info("diskless orphan pass", "deleted", n)
		}
	})
}
