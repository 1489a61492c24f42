package group

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// Record key versions of __consumer_offsets (Kafka's schemas).
const (
	offsetKeyVersion   = 1 // OffsetCommitKey
	groupKeyVersion    = 2 // GroupMetadataKey
	offsetValueVersion = 3 // OffsetCommitValue with leader epoch
	groupValueVersion  = 3 // GroupMetadataValue with static members
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is one committed offset.
type Offset struct {
	Offset      int64
	LeaderEpoch int32 // -1 when the client did not send one
	Metadata    string
	CommitTime  time.Time
}

// offsetRecord encodes a commit (or, with o nil, a tombstone).
func offsetRecord(group string, tp TopicPartition, o *Offset) batch.Record {
	key := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	r := batch.Record{Key: key.AppendTo(nil)}
	if o != nil {
		v := kmsg.OffsetCommitValue{Version: offsetValueVersion, Offset: o.Offset, LeaderEpoch: o.LeaderEpoch,
			Metadata: o.Metadata, CommitTimestamp: o.CommitTime.UnixMilli()}
		r.Value = v.AppendTo(nil)
	}
	return r
}

// buildBatch numbers records and encodes them as one uncompressed batch.
func buildBatch(records []batch.Record, now time.Time) ([]byte, error) {
	for i := range records {
		records[i].OffsetDelta = int32(i)
	}
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = now.UnixMilli()
	return batch.Build(opts, records)
}

// groupRecord encodes a classic group's metadata as Kafka's coordinator
// writes it after each rebalance and when the group empties (or, with
// tombstone, the group's tombstone). Only the chosen protocol's
// subscription is kept, as in Kafka.
func groupRecord(g *groupState, tombstone bool, now time.Time) batch.Record {
	key := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: g.name}
	r := batch.Record{Key: key.AppendTo(nil)}
	if tombstone {
		return r
	}
	v := kmsg.GroupMetadataValue{Version: groupValueVersion, ProtocolType: g.protocolType, Generation: g.generation,
		CurrentStateTimestamp: now.UnixMilli()}
	if g.state == StateEmpty {
		v.CurrentStateTimestamp = g.emptySince.UnixMilli()
	} else {
		v.Protocol, v.Leader = kmsg.StringPtr(g.protocol), kmsg.StringPtr(g.leader)
		for _, id := range slices.Sorted(maps.Keys(g.members)) {
			m := g.members[id]
			gm := kmsg.GroupMetadataValueMember{MemberID: id, ClientID: m.clientID, ClientHost: m.clientHost,
				RebalanceTimeoutMillis: int32(m.rebalanceTimeout.Milliseconds()), SessionTimeoutMillis: int32(m.sessionTimeout.Milliseconds()),
				Subscription: m.metadataFor(g.protocol), Assignment: m.assignment}
			if m.instanceID != "" {
				gm.InstanceID = kmsg.StringPtr(m.instanceID)
			}
			v.Members = append(v.Members, gm)
		}
	}
	r.Value = v.AppendTo(nil)
	return r
}

// decoded is one replayed record: an offset commit or tombstone, or
// (meta set) a classic group's metadata or tombstone. Records of other
// kinds come back with ok false.
type decoded struct {
	group  string
	tp     TopicPartition
	offset *Offset // nil: tombstone
	meta   bool
	value  *kmsg.GroupMetadataValue // with meta; nil: the group's tombstone
	// consumer is a KIP-848 group's record (consumer_records.go).
	consumer *consumerRecord
}

func decodeRecord(r batch.Record) (d decoded, ok bool, err error) {
	if len(r.Key) < 2 {
		return d, false, fmt.Errorf("record key of %d bytes", len(r.Key))
	}
	version := int16(r.Key[0])<<8 | int16(r.Key[1])
	switch {
	case version == groupKeyVersion:
		return decodeGroupRecord(r)
	case version >= firstConsumerKeyType && version <= lastConsumerKeyType && version != 4:
		group, member, err := decodeConsumerKey(version, r.Key)
		if err != nil {
			return d, false, err
		}
		return decoded{group: group, consumer: &consumerRecord{kind: version, member: member, value: r.Value}}, true, nil
	case version > offsetKeyVersion:
		return d, false, nil // Kafka's partition metadata and newer kinds
	}
	var key kmsg.OffsetCommitKey
	if err := key.ReadFrom(r.Key); err != nil {
		return d, false, fmt.Errorf("offset commit key: %w", err)
	}
	d.group, d.tp = key.Group, TopicPartition{Topic: key.Topic, Partition: key.Partition}
	if r.Value == nil {
		return d, true, nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(r.Value); err != nil {
		return d, false, fmt.Errorf("offset commit value of %s %s-%d: %w", key.Group, key.Topic, key.Partition, err)
	}
	epoch := int32(-1)
	if v.Version >= 3 {
		epoch = v.LeaderEpoch
	}
	d.offset = &Offset{Offset: v.Offset, LeaderEpoch: epoch, Metadata: v.Metadata, CommitTime: time.UnixMilli(v.CommitTimestamp)}
	return d, true, nil
}

func decodeGroupRecord(r batch.Record) (d decoded, ok bool, err error) {
	var key kmsg.GroupMetadataKey
	if err := key.ReadFrom(r.Key); err != nil {
		return d, false, fmt.Errorf("group metadata key: %w", err)
	}
	d.group, d.meta = key.Group, true
	if r.Value == nil {
		return d, true, nil
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		return d, false, fmt.Errorf("group metadata value of %s: %w", key.Group, err)
	}
	d.value = &v
	return d, true, nil
}
