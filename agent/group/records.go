package group

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// Record key versions of __consumer_offsets (Kafka's schemas).
const (
	offsetKeyVersion   = 1 // OffsetCommitKey
	groupKeyVersion    = 2 // GroupMetadataKey
	offsetValueVersion = 3 // OffsetCommitValue with leader epoch
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

// decoded is one replayed record: an offset commit or tombstone. Records
// of other kinds come back with ok false.
type decoded struct {
	group  string
	tp     TopicPartition
	offset *Offset // nil: tombstone
}

func decodeRecord(r batch.Record) (d decoded, ok bool, err error) {
	if len(r.Key) < 2 {
		return d, false, fmt.Errorf("record key of %d bytes", len(r.Key))
	}
	version := int16(r.Key[0])<<8 | int16(r.Key[1])
	if version > offsetKeyVersion {
		return d, false, nil // group metadata and newer kinds
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
