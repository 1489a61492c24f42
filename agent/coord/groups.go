package coord

// The group coordinators: one per partition of __consumer_offsets led
// here (agent/group), their partitions adapted to coordlog.Log, and the
// topics KIP-848 assignors see.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/agent/coordlog"
	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/replica"
	"github.com/strata-streaming/strata/agent/topics"
)

// offsetsTopic is the internal topic whose partitions hold committed
// offsets; partition group.Partition(id, N) coordinates group id.
const offsetsTopic = topics.ConsumerOffsets

// offsetsTopicConfigs: committed offsets are kept until a tombstone or
// expiry removes them, never by age of segment; the log cleaner keeps the
// newest value of each key, so loading a coordinator costs the live keys,
// not every commit ever made. Segments are --offsets-topic-segment-bytes.
// A compacted topic is not tiered. (A __consumer_offsets created before
// compaction existed, with retention.ms=-1 and cleanup.policy=delete, is
// moved to compact when an agent starts:
// topics.Table.CompactInternalTopics.)
func (c *Coordinators) offsetsTopicConfigs() map[string]string {
	return map[string]string{metadata.CleanupPolicy: "compact", metadata.SegmentBytes: strconv.Itoa(int(c.cfg.OffsetsTopicSegmentBytes))}
}

// partitionLog adapts a partition of an internal topic to coordlog.Log,
// for the group and the transaction coordinators alike.
type partitionLog struct{ p *partition.Partition }

var _ coordlog.Log = partitionLog{}

func (o partitionLog) Append(ctx context.Context, raw []byte) error {
	_, err := o.p.AppendAndWait(ctx, raw, -1)
	if errors.Is(err, dataplane.ErrNotLeader) || errors.Is(err, replica.ErrNotLeader) {
		// The partition moved: for a coordinator's client that is Kafka's
		// NOT_COORDINATOR, which makes it look the coordinator up again.
		// Not wrapped: the wire server would find NOT_LEADER_OR_FOLLOWER
		// first.
		return fmt.Errorf("%w: %v", dataplane.ErrNotCoordinator, err)
	}
	return err
}

func (o partitionLog) Read(offset int64, maxBytes int) ([]byte, error) {
	// Replay may read from the bucket (a partition restored on a new disk).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return o.p.Read(ctx, offset, maxBytes, true)
}

func (o partitionLog) LogStartOffset() int64 { return o.p.LogStartOffset() }
func (o partitionLog) HighWatermark() int64  { return o.p.HighWatermark() }

// ensureOffsetsTopic returns __consumer_offsets, creating it on first use
// with --offsets-topic-partitions partitions.
func (c *Coordinators) ensureOffsetsTopic(ctx context.Context) (*topics.Entry, error) {
	return c.table.EnsureInternal(ctx, offsetsTopic, c.cfg.OffsetsTopicPartitions, c.offsetsTopicConfigs())
}

// offsetsPartition returns the partition of __consumer_offsets that
// coordinates groupID.
func (c *Coordinators) offsetsPartition(ctx context.Context, groupID string) (*partition.Partition, error) {
	e, err := c.ensureOffsetsTopic(ctx)
	if err != nil {
		return nil, err
	}
	index := group.Partition(groupID, e.Meta.Partitions)
	for _, p := range e.Parts {
		if p.Index() == index {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: %s-%d has no replica here", dataplane.ErrNotCoordinator, offsetsTopic, index)
}

// FindGroupCoordinator implements kafka.Groups: the leader of the
// group's partition of __consumer_offsets, wherever it is.
func (c *Coordinators) FindGroupCoordinator(ctx context.Context, groupID string) (dataplane.Broker, error) {
	e, err := c.ensureOffsetsTopic(ctx)
	if err != nil {
		return dataplane.Broker{}, err
	}
	return c.leaderBroker(e, group.Partition(groupID, e.Meta.Partitions))
}

// leaderBroker is the live agent that leads partition index of e: a
// coordinator's address.
func (c *Coordinators) leaderBroker(e *topics.Entry, index int32) (dataplane.Broker, error) {
	if int(index) >= len(e.Snap.Partitions) {
		return dataplane.Broker{}, fmt.Errorf("%w: %s-%d is not open here", dataplane.ErrCoordinatorNotAvailable, e.Meta.Name, index)
	}
	leader := e.Snap.Partitions[index].Leader()
	for _, b := range c.host.Brokers() {
		if b.ID == leader {
			return b, nil
		}
	}
	return dataplane.Broker{}, fmt.Errorf("%w: leader %d of %s-%d is not live", dataplane.ErrCoordinatorNotAvailable, leader, e.Meta.Name, index)
}

// GroupCoordinator implements kafka.Groups.
func (c *Coordinators) GroupCoordinator(ctx context.Context, groupID string) (*group.Coordinator, error) {
	if groupID == "" {
		return nil, group.ErrInvalidGroupID
	}
	p, err := c.offsetsPartition(ctx, groupID)
	if err != nil {
		return nil, err
	}
	return c.groups.get(p, func(int32) (*group.Coordinator, error) {
		g, err := group.Load(ctx, p.Index(), partitionLog{p}, c.groupConfig(), c.logger.With("component", "group"))
		if err != nil {
			return nil, errors.Join(dataplane.ErrCoordinatorNotAvailable, err)
		}
		return g, nil
	})
}

// GroupCoordinators implements kafka.Groups.
func (c *Coordinators) GroupCoordinators() []*group.Coordinator { return c.groups.all(nil) }

// CurrentGroupCoordinators returns the loaded group coordinators whose
// partition of __consumer_offsets this agent still leads in the epoch it
// loaded them in; a stale one stays loaded until its next use, and must
// not report offsets its successor also reports (the consumer lag
// metrics).
func (c *Coordinators) CurrentGroupCoordinators() []*group.Coordinator {
	e, ok := c.table.Entry(offsetsTopic)
	if !ok {
		return nil
	}
	current := map[int32]int32{} // partition -> epoch, for those led here
	for _, p := range e.Parts {
		if p.Leader() == c.id {
			current[p.Index()] = p.LeaderEpoch()
		}
	}
	return c.groups.all(current)
}

func (c *Coordinators) groupConfig() group.Config {
	g := group.DefaultConfig()
	g.OffsetsRetention = c.cfg.OffsetsRetention
	g.InitialRebalanceDelay = c.cfg.GroupInitialRebalanceDelay
	g.ConsumerSessionTimeout = c.cfg.GroupConsumerSessionTimeout
	g.ConsumerHeartbeatInterval = c.cfg.GroupConsumerHeartbeatInterval
	g.Topics = groupTopics{c.table}
	return g
}

// groupTopics shows the agent's topics to KIP-848 assignors.
type groupTopics struct{ t Table }

var _ group.Topics = groupTopics{}

func topicInfo(t *dataplane.Topic) group.TopicInfo {
	return group.TopicInfo{Name: t.Name, ID: t.ID, Partitions: t.PartitionCount, Internal: t.Internal}
}

func (g groupTopics) Topic(name string) (group.TopicInfo, bool) {
	t, ok := g.t.Topic(name)
	if !ok {
		return group.TopicInfo{}, false
	}
	return topicInfo(t), true
}

func (g groupTopics) TopicByID(id [16]byte) (group.TopicInfo, bool) {
	t, ok := g.t.TopicByID(id)
	if !ok {
		return group.TopicInfo{}, false
	}
	return topicInfo(t), true
}

func (g groupTopics) AllTopics() []group.TopicInfo {
	var out []group.TopicInfo
	for _, t := range g.t.Topics() {
		out = append(out, topicInfo(t))
	}
	return out
}

// ExpireOffsets applies offsets retention on every loaded group
// coordinator; the agent calls it from its retention loop.
func (c *Coordinators) ExpireOffsets(ctx context.Context) {
	for _, g := range c.GroupCoordinators() {
		n, err := g.ExpireOffsets(ctx)
		switch {
		case errors.Is(err, group.ErrClosed):
		case err != nil:
			c.logger.Error("expire committed offsets", "err", err)
		case n > 0:
			c.logger.Info("expired committed offsets", "offsets", n)
		}
	}
}
