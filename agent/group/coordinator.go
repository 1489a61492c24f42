package group

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/coordlog"
	"github.com/strata-streaming/strata/agent/log/batch"
)

// Log is the partition of __consumer_offsets a Coordinator keeps its
// records in (agent/coordlog); the agent implements it over a partition
// log.
type Log = coordlog.Log

// Config holds a coordinator's settings, named after Kafka's.
type Config struct {
	// OffsetsRetention (offsets.retention.minutes) is how long the offsets
	// of a group without members are kept after the later of their last
	// commit and the moment the group became Empty.
	OffsetsRetention time.Duration
	// MaxMetadataBytes (offset.metadata.max.bytes) bounds a commit's
	// metadata string.
	MaxMetadataBytes int
	// MinSessionTimeout and MaxSessionTimeout bound what a member may ask
	// for (group.min.session.timeout.ms, group.max.session.timeout.ms).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay (group.initial.rebalance.delay.ms) holds the
	// first rebalance of an empty group so that members starting together
	// join one generation instead of one each.
	InitialRebalanceDelay time.Duration
	// ConsumerSessionTimeout and ConsumerHeartbeatInterval are KIP-848's
	// group.consumer.session.timeout.ms and heartbeat.interval.ms.
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// Topics resolves KIP-848 subscriptions; without it such groups get no
	// partitions.
	Topics Topics
	// Now is the clock of commit times and offsets retention; nil is
	// time.Now. Timers (sessions, rebalances) run on the real clock.
	Now func() time.Time
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{OffsetsRetention: 7 * 24 * time.Hour, MaxMetadataBytes: 4096,
		MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 30 * time.Minute, InitialRebalanceDelay: 3 * time.Second,
		ConsumerSessionTimeout: 45 * time.Second, ConsumerHeartbeatInterval: 5 * time.Second, Topics: noTopics{}}
}

// Coordinator serves the groups that hash to one partition of
// __consumer_offsets. See the package comment for the contract.
type Coordinator struct {
	partition int32
	log       Log
	cfg       Config
	logger    *slog.Logger
	now       func() time.Time
	topics    Topics
	loadedAt  time.Time

	mu     sync.Mutex
	groups map[string]*groupState
	// pendingTxn holds, per producer id, the offsets of transactional
	// commits (TxnOffsetCommit) whose transaction has no marker yet.
	pendingTxn map[int64]map[groupPartition]Offset
	closed     bool
}

// groupState is what the coordinator knows of one group: its committed
// offsets and, while it has members, its classic-protocol state.
type groupState struct {
	name    string
	offsets map[TopicPartition]Offset

	state                  State
	protocolType, protocol string
	generation             int32
	leader                 string
	members                map[string]*member
	pending                map[string]*time.Timer // KIP-394 ids handed out, not yet joined
	static                 map[string]string      // instance id -> member id
	rebalance              *time.Timer            // ends the join phase at the latest
	initialDelay           *time.Timer            // group.initial.rebalance.delay, while running
	initialDelayEnd        time.Time
	cg                     *consumerGroup // KIP-848 state, nil for classic groups
	replayed               bool           // had offsets when the coordinator loaded
	// kept is set once the group had a generation, a group epoch or a
	// committed offset. Kafka keeps such a group, Empty, after its last
	// member leaves, until the offsets cleanup removes it (ExpireOffsets);
	// a group that never got that far is forgotten at once.
	kept bool
	// consumerStored is what the partition holds of the group's KIP-848
	// records, by key (consumer_records.go).
	consumerStored        map[string][]byte
	consumerStoredMembers int // members in consumerStored
	// emptySince is when the group last became Empty (or, for a group
	// rebuilt from the log, when the coordinator loaded): the offsets of a
	// group without members are kept for OffsetsRetention from then.
	emptySince time.Time
}

// active reports whether g has members, member ids handed out or a
// rebalance in progress, in either protocol.
func (g *groupState) active() bool { return g.usesClassic() || g.usesConsumer() }

// forgetIfUnusedLocked drops g if it never got anywhere: no generation, no
// offsets, no members, no member ids handed out (a refused first join, a
// member id that was never used). Groups that did are kept until
// ExpireOffsets removes them, as Kafka keeps an Empty group.
func (c *Coordinator) forgetIfUnusedLocked(g *groupState) {
	if !g.kept && len(g.offsets) == 0 && !g.active() && c.groups[g.name] == g {
		c.dropLocked(g)
	}
}

// dropLocked removes g from memory; the group is then Dead.
func (c *Coordinator) dropLocked(g *groupState) {
	g.stopRebalanceTimers()
	if g.cg != nil {
		stopTimer(&g.cg.holdTimer)
	}
	delete(c.groups, g.name)
}

// group returns the state of name, creating an empty one.
func (c *Coordinator) group(name string) *groupState {
	g := c.groups[name]
	if g == nil {
		g = &groupState{name: name, offsets: map[TopicPartition]Offset{}, members: map[string]*member{},
			pending: map[string]*time.Timer{}, static: map[string]string{}}
		c.groups[name] = g
	}
	return g
}

// Load replays the partition and returns a ready coordinator.
func Load(ctx context.Context, partition int32, l Log, cfg Config, logger *slog.Logger) (*Coordinator, error) {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Coordinator{partition: partition, log: l, cfg: cfg, logger: logger, now: cfg.Now, groups: map[string]*groupState{},
		topics: cfg.Topics, pendingTxn: map[int64]map[groupPartition]Offset{}}
	if c.now == nil {
		c.now = time.Now
	}
	if c.topics == nil {
		c.topics = noTopics{}
	}
	began := time.Now()
	end := l.HighWatermark()
	records := 0
	err := coordlog.Replay(l, func(h batch.Header, raw []byte) error {
		if h.IsControl() {
			c.replayMarker(h, raw)
			return nil
		}
		recs, err := coordlog.Records(raw)
		if err != nil {
			return err
		}
		for _, r := range recs {
			d, ok, err := decodeRecord(r)
			if err == nil && ok && d.consumer != nil {
				err = c.replayConsumer(d.group, *d.consumer)
			}
			if err != nil {
				return fmt.Errorf("offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
			}
			switch {
			case !ok || d.consumer != nil:
			case h.IsTransactional():
				c.addPendingTxn(h.ProducerID, d)
			default:
				c.apply(d)
				records++
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("group: replay partition %d: %w", partition, err)
	}
	c.loadedAt = c.now()
	c.mu.Lock()
	for _, g := range c.groups {
		g.replayed = true
		if g.emptySince.IsZero() {
			// No metadata record (a group of an older Strata, or one
			// that never had a generation): when it became Empty is not
			// known, so its retention runs from now.
			g.emptySince = c.loadedAt
		}
		if len(g.offsets) == 0 && !g.kept {
			delete(c.groups, g.name) // deleted, or all its offsets expired
			continue
		}
		// Restored members have one session from now to heartbeat the
		// new coordinator, as in Kafka.
		for _, m := range g.members {
			c.touchLocked(g, m)
		}
		c.finishConsumerLoadLocked(g)
	}
	c.mu.Unlock()
	logger.Info("group coordinator loaded", "partition", partition, "records", records, "groups", len(c.groups), "end", end,
		"took", time.Since(began))
	return c, nil
}

// apply changes memory for one record (replayed or just written).
func (c *Coordinator) apply(d decoded) {
	if d.meta {
		c.replayGroup(d)
		return
	}
	g := c.groups[d.group]
	if d.offset == nil {
		if g != nil {
			delete(g.offsets, d.tp)
			c.forgetIfUnusedLocked(g)
		}
		return
	}
	g = c.group(d.group)
	g.offsets[d.tp] = *d.offset
	g.kept = true
}

// writeLocked appends the offset records ds, and after them extra (group
// metadata, which memory holds already), in one batch, and applies ds
// once it is durable. c.mu is held.
func (c *Coordinator) writeLocked(ctx context.Context, ds []decoded, extra ...batch.Record) error {
	if c.closed {
		return ErrClosed
	}
	if len(ds)+len(extra) == 0 {
		return nil
	}
	recs := make([]batch.Record, 0, len(ds)+len(extra))
	for _, d := range ds {
		recs = append(recs, offsetRecord(d.group, d.tp, d.offset))
	}
	recs = append(recs, extra...)
	raw, err := buildBatch(recs, c.now())
	if err != nil {
		return fmt.Errorf("group: encode records: %w", err)
	}
	if err := c.log.Append(ctx, raw); err != nil {
		return err
	}
	for _, d := range ds {
		c.apply(d)
	}
	return nil
}

// Commit is one OffsetCommit of a group.
type Commit struct {
	Group      string
	MemberID   string
	InstanceID string // static members (OffsetCommit v7+)
	Generation int32  // -1 for a commit from outside the group protocol
	Offsets    map[TopicPartition]Offset
	// GroupMustExist is OffsetCommit v9+: a commit with a generation to a
	// group that does not exist is ErrGroupNotFound, not
	// ErrIllegalGeneration.
	GroupMustExist bool
}

// CommitOffsets stores every offset of r, all or none. The rules are
// Kafka's: a commit from outside the group protocol (generation -1, as
// consumers that assign partitions themselves and admin tools send) is
// accepted while the group has no members; otherwise the member must exist
// (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) at the group's generation
// (ILLEGAL_GENERATION). Members commit in Stable and also in
// PreparingRebalance, which is when clients commit what they are about to
// give up; only in CompletingRebalance, between JoinGroup and the leader's
// SyncGroup, is the answer ErrRebalanceInProgress.
func (c *Coordinator) CommitOffsets(ctx context.Context, r Commit) error {
	if r.Group == "" {
		return ErrInvalidGroupID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	g := c.groups[r.Group]
	switch {
	case g != nil && g.usesConsumer():
		if err := c.checkConsumerCommitLocked(g, r); err != nil {
			return err
		}
	case r.Generation < 0 && (g == nil || g.state == StateEmpty):
		// A simple commit, accepted while the group is Empty.
	case g == nil && r.GroupMustExist:
		return fmt.Errorf("%w: %q", ErrGroupNotFound, r.Group)
	case g == nil:
		return fmt.Errorf("%w: group %q has no generation %d", ErrIllegalGeneration, r.Group, r.Generation)
	case r.Generation < 0 && r.MemberID == "" && r.InstanceID == "":
		return fmt.Errorf("%w: group %q has members; commit as one of them", ErrUnknownMember, r.Group)
	default:
		gm, m, err := c.checkMemberLocked(r.Group, r.MemberID, r.InstanceID, r.Generation)
		if err != nil {
			return err
		}
		if gm.state == StateCompletingRebalance {
			return ErrRebalanceInProgress
		}
		c.touchLocked(gm, m)
	}
	now := c.now()
	ds := make([]decoded, 0, len(r.Offsets))
	for _, tp := range sortedPartitions(r.Offsets) {
		o := r.Offsets[tp]
		o.CommitTime = now
		ds = append(ds, decoded{group: r.Group, tp: tp, offset: &o})
	}
	return c.writeLocked(ctx, ds)
}

// FetchOffsets returns the group's committed offsets of tps, or all of them
// when tps is nil. Partitions without a commit are absent.
func (c *Coordinator) FetchOffsets(group string, tps []TopicPartition) (map[TopicPartition]Offset, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	g := c.groups[group]
	if g == nil {
		return map[TopicPartition]Offset{}, nil
	}
	if tps == nil {
		return maps.Clone(g.offsets), nil
	}
	out := make(map[TopicPartition]Offset, len(tps))
	for _, tp := range tps {
		if o, ok := g.offsets[tp]; ok {
			out[tp] = o
		}
	}
	return out, nil
}

// DeleteOffsets removes the group's offsets of tps (OffsetDelete).
func (c *Coordinator) DeleteOffsets(ctx context.Context, group string, tps []TopicPartition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return fmt.Errorf("%w: %q", ErrGroupNotFound, group)
	}
	subscribed := g.subscribedTopics()
	var ds []decoded
	for _, tp := range tps {
		if subscribed(tp.Topic) {
			return fmt.Errorf("%w: %q", ErrSubscribedToTopic, tp.Topic)
		}
		if _, ok := g.offsets[tp]; ok {
			ds = append(ds, decoded{group: group, tp: tp})
		}
	}
	return c.writeLocked(ctx, ds)
}

// DeleteGroup removes a group without members and all its offsets.
func (c *Coordinator) DeleteGroup(ctx context.Context, group string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return fmt.Errorf("%w: %q", ErrGroupNotFound, group)
	}
	if g.active() {
		return fmt.Errorf("%w: %q is %s", ErrNotEmpty, group, g.stateName())
	}
	ds := make([]decoded, 0, len(g.offsets))
	for _, tp := range sortedPartitions(g.offsets) {
		ds = append(ds, decoded{group: group, tp: tp})
	}
	if err := c.writeLocked(ctx, ds, append(consumerTombstones(g), groupRecord(g, true, c.now()))...); err != nil {
		return err
	}
	g.consumerStored = nil
	if c.groups[group] == g {
		c.dropLocked(g)
	}
	return nil
}

// Groups lists the groups this coordinator holds state for (offsets or
// members), sorted.
func (c *Coordinator) Groups() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.groups))
}

// ExpireOffsets is Kafka's offsets cleanup: it deletes the offsets of
// groups without members once OffsetsRetention has passed since the later
// of their commit and the moment the group became Empty, then removes the
// Empty groups left without offsets (Kafka's Dead). It returns how many
// offsets it deleted. Offsets of a group with members never expire here.
func (c *Coordinator) ExpireOffsets(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cutoff := c.now().Add(-c.cfg.OffsetsRetention)
	var ds []decoded
	for _, name := range slices.Sorted(maps.Keys(c.groups)) {
		g := c.groups[name]
		if g.active() {
			continue
		}
		for _, tp := range sortedPartitions(g.offsets) {
			o := g.offsets[tp]
			if o.CommitTime.Before(cutoff) && g.emptySince.Before(cutoff) {
				ds = append(ds, decoded{group: name, tp: tp})
			}
		}
	}
	// A group left without offsets goes, with its metadata's tombstone.
	emptied := map[string]int{}
	for _, d := range ds {
		emptied[d.group]++
	}
	var tombstones []batch.Record
	for _, name := range slices.Sorted(maps.Keys(c.groups)) {
		if g := c.groups[name]; !g.active() && len(g.offsets) == emptied[name] {
			tombstones = append(tombstones, consumerTombstones(g)...)
			tombstones = append(tombstones, groupRecord(g, true, c.now()))
		}
	}
	if err := c.writeLocked(ctx, ds, tombstones...); err != nil {
		return 0, err
	}
	for _, g := range c.groups {
		if !g.active() && len(g.offsets) == 0 {
			c.logger.Info("group removed: empty and without offsets", "group", g.name)
			c.dropLocked(g)
		}
	}
	return len(ds), nil
}

// Close makes every later call fail with ErrClosed, answers parked
// JoinGroup and SyncGroup requests with it (clients then look for the
// coordinator again) and stops every timer. Calls in progress finish
// first. It may be called twice.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, g := range c.groups {
		g.stopRebalanceTimers()
		for _, t := range g.pending {
			t.Stop()
		}
		if g.cg != nil {
			stopTimer(&g.cg.holdTimer)
			for _, m := range g.cg.members {
				stopTimer(&m.expiry)
				stopTimer(&m.revokeBy)
			}
		}
		for _, m := range g.members {
			if m.expiry != nil {
				m.expiry.Stop()
			}
			if m.join != nil {
				m.join <- joinAnswer{err: ErrClosed}
				m.join = nil
			}
			if m.sync != nil {
				m.sync <- syncAnswer{err: ErrClosed}
				m.sync = nil
			}
		}
	}
}

// sortedPartitions orders a commit's partitions so records are written in a
// stable order (tests and replays compare logs).
func sortedPartitions[V any](m map[TopicPartition]V) []TopicPartition {
	return slices.SortedFunc(maps.Keys(m), ComparePartitions)
}

// ComparePartitions orders by topic, then partition.
func ComparePartitions(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// Partition returns the index of the __consumer_offsets partition that
// coordinates group: Java's String.hashCode of the id, made non-negative,
// modulo the partition count, exactly as Kafka computes it, so the same
// group lands on the same partition number in both systems.
func Partition(group string, partitions int32) int32 {
	var h int32
	for _, r := range group {
		// Java hashes UTF-16 code units.
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0 // Kafka's Utils.abs maps MIN_VALUE to 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
