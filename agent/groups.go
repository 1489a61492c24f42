package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/kafka"
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
func (a *Agent) offsetsTopicConfigs() map[string]string {
	return map[string]string{metadata.CleanupPolicy: "compact", metadata.SegmentBytes: strconv.Itoa(int(a.cfg.OffsetsTopicSegmentBytes))}
}

// offsetsLog adapts a partition of __consumer_offsets to group.Log.
type offsetsLog struct{ p *partition.Partition }

func (o offsetsLog) Append(ctx context.Context, raw []byte) error {
	_, err := o.p.AppendAndWait(ctx, raw, -1)
	if errors.Is(err, kafka.ErrNotLeader) || errors.Is(err, replica.ErrNotLeader) {
		// The partition moved: for a group client that is Kafka's
		// NOT_COORDINATOR, which makes it look the coordinator up again.
		// Not wrapped: errorCode would find NOT_LEADER_OR_FOLLOWER first.
		return fmt.Errorf("%w: %v", kafka.ErrNotCoordinator, err)
	}
	return err
}
func (o offsetsLog) Read(offset int64, maxBytes int) ([]byte, error) {
	// Replay may read from the bucket (a partition restored on a new disk).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return o.p.Read(ctx, offset, maxBytes, true)
}
func (o offsetsLog) LogStartOffset() int64 { return o.p.LogStartOffset() }
func (o offsetsLog) HighWatermark() int64  { return o.p.HighWatermark() }

// ensureOffsetsTopic returns __consumer_offsets, creating it on first use
// with --offsets-topic-partitions partitions.
func (a *Agent) ensureOffsetsTopic(ctx context.Context) (*topics.Entry, error) {
	return a.topics.EnsureInternal(ctx, offsetsTopic, a.cfg.OffsetsTopicPartitions, a.offsetsTopicConfigs())
}

// offsetsPartition returns the partition of __consumer_offsets that
// coordinates groupID.
func (a *Agent) offsetsPartition(ctx context.Context, groupID string) (*partition.Partition, error) {
	e, err := a.ensureOffsetsTopic(ctx)
	if err != nil {
		return nil, err
	}
	index := group.Partition(groupID, e.Meta.Partitions)
	for _, p := range e.Parts {
		if p.Index() == index {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w: %s-%d has no replica here", kafka.ErrNotCoordinator, offsetsTopic, index)
}

// FindGroupCoordinator implements kafka.Groups: the leader of the
// group's partition of __consumer_offsets, wherever it is.
func (a *Agent) FindGroupCoordinator(ctx context.Context, groupID string) (kafka.Broker, error) {
	e, err := a.ensureOffsetsTopic(ctx)
	if err != nil {
		return kafka.Broker{}, err
	}
	return a.leaderBroker(e, group.Partition(groupID, e.Meta.Partitions))
}

// leaderBroker is the live agent that leads partition index of e: a
// coordinator's address.
func (a *Agent) leaderBroker(e *topics.Entry, index int32) (kafka.Broker, error) {
	if int(index) >= len(e.Snap.Partitions) {
		return kafka.Broker{}, fmt.Errorf("%w: %s-%d is not open here", kafka.ErrCoordinatorNotAvailable, e.Meta.Name, index)
	}
	leader := e.Snap.Partitions[index].Leader()
	for _, b := range a.Brokers() {
		if b.ID == leader {
			return b, nil
		}
	}
	return kafka.Broker{}, fmt.Errorf("%w: leader %d of %s-%d is not live", kafka.ErrCoordinatorNotAvailable, leader, e.Meta.Name, index)
}

// GroupCoordinator implements kafka.Groups.
func (a *Agent) GroupCoordinator(ctx context.Context, groupID string) (*group.Coordinator, error) {
	if groupID == "" {
		return nil, group.ErrInvalidGroupID
	}
	p, err := a.offsetsPartition(ctx, groupID)
	if err != nil {
		return nil, err
	}
	return a.coords.get(p, a.id, offsetsTopic, group.ErrClosed, func(int32) (*group.Coordinator, error) {
		c, err := group.Load(ctx, p.Index(), offsetsLog{p}, a.groupConfig(), a.logger.With("component", "group"))
		if err != nil {
			return nil, errors.Join(kafka.ErrCoordinatorNotAvailable, err)
		}
		return c, nil
	})
}

// GroupCoordinators implements kafka.Groups.
func (a *Agent) GroupCoordinators() []*group.Coordinator { return a.coords.all(nil) }

func (a *Agent) groupConfig() group.Config {
	c := group.DefaultConfig()
	c.OffsetsRetention = a.cfg.OffsetsRetention
	c.InitialRebalanceDelay = a.cfg.GroupInitialRebalanceDelay
	c.ConsumerSessionTimeout = a.cfg.GroupConsumerSessionTimeout
	c.ConsumerHeartbeatInterval = a.cfg.GroupConsumerHeartbeatInterval
	c.Topics = groupTopics{a}
	return c
}

// groupTopics shows the agent's topics to KIP-848 assignors.
type groupTopics struct{ a *Agent }

func topicInfo(t *kafka.Topic) group.TopicInfo {
	return group.TopicInfo{Name: t.Name, ID: t.ID, Partitions: t.PartitionCount, Internal: t.Internal}
}

func (g groupTopics) Topic(name string) (group.TopicInfo, bool) {
	t, ok := g.a.Topic(name)
	if !ok {
		return group.TopicInfo{}, false
	}
	return topicInfo(t), true
}

func (g groupTopics) TopicByID(id [16]byte) (group.TopicInfo, bool) {
	t, ok := g.a.topics.TopicByID(id)
	if !ok {
		return group.TopicInfo{}, false
	}
	return topicInfo(t), true
}

func (g groupTopics) AllTopics() []group.TopicInfo {
	var out []group.TopicInfo
	for _, t := range g.a.Topics() {
		out = append(out, topicInfo(t))
	}
	return out
}

// unloadCoordinator stops the coordinator of a __consumer_offsets
// partition this agent no longer leads, so it does not expire members or
// answer from stale memory while the new leader coordinates the groups.
func (a *Agent) unloadCoordinator(index int32) {
	if a.coords.unload(index) {
		a.logger.Info("group coordinator unloaded: the partition is led elsewhere", "partition", index)
	}
}

// expireOffsets runs offsets.retention on every loaded coordinator.
func (a *Agent) expireOffsets(ctx context.Context) {
	for _, c := range a.GroupCoordinators() {
		n, err := c.ExpireOffsets(ctx)
		switch {
		case errors.Is(err, group.ErrClosed):
		case err != nil:
			a.logger.Error("expire committed offsets", "err", err)
		case n > 0:
			a.logger.Info("expired committed offsets", "offsets", n)
		}
	}
}
