package coord

// The diskless batch coordinators (agent/batchcoord): one per partition
// of __diskless_state led here, loaded as the group coordinators are
// (groups.go). Partition DisklessPartition(topic id, p, N) coordinates
// diskless partition (topic id, p).

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/topics"
)

// disklessTopic is the internal topic of the batch coordinators.
const disklessTopic = topics.DisklessState

// disklessTopicConfigs: compacted, as the other coordinators' topics, so
// that the cleaner keeps only the newest Partition record and the Runs
// not yet tombstoned; 100 MiB segments.
var disklessTopicConfigs = map[string]string{metadata.CleanupPolicy: "compact", metadata.SegmentBytes: strconv.Itoa(100 << 20)}

// DisklessPartition is the partition of a __diskless_state of n
// partitions that coordinates partition p of the topic with id topicID:
// FNV-1a over the id and the partition, big-endian, modulo n.
func DisklessPartition(topicID [16]byte, p int32, n int32) int32 {
	h := fnv.New32a()
	h.Write(topicID[:])
	h.Write(binary.BigEndian.AppendUint32(nil, uint32(p)))
	return int32(h.Sum32() % uint32(n))
}

// ensureDisklessTopic returns __diskless_state, creating it on first use
// with --diskless-state-partitions partitions.
func (c *Coordinators) ensureDisklessTopic(ctx context.Context) (*topics.Entry, error) {
	return c.table.EnsureInternal(ctx, disklessTopic, c.cfg.DisklessStatePartitions, disklessTopicConfigs)
}

// DisklessCoordinator returns the loaded coordinator of diskless
// partition (topicID, p), whose __diskless_state partition must be led
// here (dataplane.ErrNotCoordinator otherwise).
func (c *Coordinators) DisklessCoordinator(ctx context.Context, topicID [16]byte, p int32) (*batchcoord.Coordinator, error) {
	e, err := c.ensureDisklessTopic(ctx)
	if err != nil {
		return nil, err
	}
	index := DisklessPartition(topicID, p, e.Meta.Partitions)
	for _, part := range e.Parts {
		if part.Index() == index {
			return c.loadDisklessCoordinator(part)
		}
	}
	return nil, fmt.Errorf("%w: %s-%d has no replica here", dataplane.ErrNotCoordinator, disklessTopic, index)
}

func (c *Coordinators) loadDisklessCoordinator(p *partition.Partition) (*batchcoord.Coordinator, error) {
	return c.diskless.get(p, func(epoch int32) (*batchcoord.Coordinator, error) {
		cfg := batchcoord.Config{Epoch: epoch, CommitTimeout: c.cfg.DisklessCommitTimeout}
		bc, err := batchcoord.Load(p.Index(), partitionLog{p}, cfg, c.logger.With("component", "batchcoord"))
		if err != nil {
			return nil, errors.Join(dataplane.ErrCoordinatorNotAvailable, err)
		}
		c.logger.Info("batch coordinator loaded", "partition", p.Index(), "epoch", epoch)
		return bc, nil
	})
}

// DisklessLeader returns the agent that leads the partition of
// __diskless_state coordinating diskless partition (topicID, p), and
// that partition's leader epoch, from this agent's view of the topic.
func (c *Coordinators) DisklessLeader(ctx context.Context, topicID [16]byte, p int32) (leader, epoch int32, err error) {
	e, err := c.ensureDisklessTopic(ctx)
	if err != nil {
		return -1, -1, err
	}
	index := DisklessPartition(topicID, p, e.Meta.Partitions)
	if int(index) >= len(e.Snap.Partitions) {
		return -1, -1, fmt.Errorf("%w: %s-%d is not open here", dataplane.ErrCoordinatorNotAvailable, disklessTopic, index)
	}
	sp := e.Snap.Partitions[index]
	if sp.Leader() < 0 {
		return -1, -1, fmt.Errorf("%w: %s-%d has no leader", dataplane.ErrCoordinatorNotAvailable, disklessTopic, index)
	}
	return sp.Leader(), sp.LeaderEpoch(), nil
}

// DisklessReferences reports, per id, whether a batch coordinator of
// this agent references the object: every partition of __diskless_state
// led here is loaded and asked. An error (one of them could not load)
// means the answer is unknown. Without __diskless_state, nothing is
// referenced.
func (c *Coordinators) DisklessReferences(ctx context.Context, ids [][16]byte) ([]bool, error) {
	referenced := make([]bool, len(ids))
	e, ok := c.table.Entry(disklessTopic)
	if !ok {
		return referenced, nil
	}
	for _, p := range e.Parts {
		if p.Leader() != c.id {
			continue
		}
		bc, err := c.loadDisklessCoordinator(p)
		if err == nil {
			err = bc.References(ids, referenced)
		}
		if err != nil {
			return nil, fmt.Errorf("%s-%d: %w", disklessTopic, p.Index(), err)
		}
	}
	return referenced, nil
}

// DisklessCoordinatorAgents returns the agents that lead the partitions
// of __diskless_state, and whether every partition has a leader; false
// without the topic.
func (c *Coordinators) DisklessCoordinatorAgents() ([]int32, bool) {
	e, ok := c.table.Entry(disklessTopic)
	if !ok {
		return nil, false
	}
	seen := map[int32]bool{}
	var out []int32
	for _, p := range e.Snap.Partitions {
		l := p.Leader()
		if l < 0 {
			return nil, false
		}
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out, len(e.Snap.Partitions) == int(e.Meta.Partitions)
}

// ApplyDisklessRetention applies retention.ms and retention.bytes to the
// diskless partitions of the batch coordinators loaded here, as of now
// (batchcoord's retain.go). A partition whose topic this agent no longer
// knows is left alone.
func (c *Coordinators) ApplyDisklessRetention(ctx context.Context, now time.Time) {
	for _, bc := range c.diskless.all(nil) {
		for _, k := range bc.Keys() {
			t, ok := c.table.TopicByID(k.TopicID)
			if !ok || !t.Resolved.Diskless {
				continue
			}
			at, ok := bc.RetentionPoint(k, now.UnixMilli(), t.Resolved.RetentionMs, t.Resolved.RetentionBytes)
			if !ok {
				continue
			}
			if err := bc.Retain(ctx, k, at); err != nil {
				c.logger.Warn("diskless retention", "topic", t.Name, "partition", k.Partition, "err", err)
				continue
			}
			c.logger.Info("diskless retention moved the log start", "topic", t.Name, "partition", k.Partition, "log_start", at)
		}
	}
}

// LoadedDiskless returns the batch coordinators loaded here (object
// compaction works on their partitions).
func (c *Coordinators) LoadedDiskless() []*batchcoord.Coordinator { return c.diskless.all(nil) }
