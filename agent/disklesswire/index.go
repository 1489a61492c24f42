package disklesswire

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The operations of an index request's partition.
const (
	OpRead        int8 = 0 // batches from offset Value on
	OpByTimestamp int8 = 1 // the first batch whose max timestamp is at least Value
	OpEpochEnd    int8 = 2 // OffsetForLeaderEpoch for epoch Value
	OpAborted     int8 = 3 // the aborted transactions overlapping [Value, Upper)
	OpMaxTime     int8 = 4 // the batch with the largest max timestamp (the last of equals)
)

// IndexPartition is one partition an index request asks about.
type IndexPartition struct {
	TopicID   [16]byte
	Partition int32
	Op        int8
	Value     int64
	MaxBytes  int32
	Upper     int64 // OpAborted's end
}

const indexPartitionSize = 16 + 4 + 1 + 8 + 4 + 8

// IndexRequest asks a coordinator agent where diskless partitions'
// batches are; with MaxWaitMs > 0 and every OpRead at its high
// watermark, the answer waits until one of them moves or the wait ends.
type IndexRequest struct {
	v0
	MaxWaitMs  int32
	Partitions []IndexPartition
}

var _ kmsg.Request = (*IndexRequest)(nil)

func (*IndexRequest) Key() int16                    { return KeyIndex }
func (r *IndexRequest) ResponseKind() kmsg.Response { return &IndexResponse{v0: r.v0} }

func (r *IndexRequest) AppendTo(b []byte) []byte {
	b = kbin.AppendInt32(b, r.MaxWaitMs)
	b = kbin.AppendArrayLen(b, len(r.Partitions))
	for _, p := range r.Partitions {
		b = append(b, p.TopicID[:]...)
		b = kbin.AppendInt32(b, p.Partition)
		b = kbin.AppendInt8(b, p.Op)
		b = kbin.AppendInt64(b, p.Value)
		b = kbin.AppendInt32(b, p.MaxBytes)
		b = kbin.AppendInt64(b, p.Upper)
	}
	return b
}

func (r *IndexRequest) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.MaxWaitMs = rd.Int32()
	n, err := arrayLen(&rd, indexPartitionSize)
	if err != nil {
		return err
	}
	r.Partitions = make([]IndexPartition, n)
	for i := range r.Partitions {
		p := &r.Partitions[i]
		p.TopicID = rd.Uuid()
		p.Partition = rd.Int32()
		p.Op = rd.Int8()
		p.Value = rd.Int64()
		p.MaxBytes = rd.Int32()
		p.Upper = rd.Int64()
	}
	return done(&rd)
}

// Located is one committed batch: its offsets and where its bytes are.
type Located struct {
	BaseOffset, LastOffset int64
	ObjectID               [16]byte
	Position               int64
	Size                   int32
	MaxTimestamp           int64
	Epoch                  int32
	Inline                 []byte // a marker committed without an object
}

const locatedSize = 8 + 8 + 16 + 8 + 4 + 8 + 4 + 4

// IndexAnswer is one partition's answer.
type IndexAnswer struct {
	ErrorCode     int16
	LogStart      int64
	CompactedEnd  int64
	HighWatermark int64
	LastStable    int64
	CoordEpoch    int32
	// Epoch and EndOffset answer OpEpochEnd.
	Epoch     int32
	EndOffset int64
	Batches   []Located
	// Aborted answers OpAborted.
	Aborted []Aborted
}

// Aborted is an aborted transaction: its producer and the offsets from
// its first batch to its marker.
type Aborted struct {
	ProducerID, FirstOffset, LastOffset int64
}

// IndexResponse answers an IndexRequest, one answer per partition in the
// request's order.
type IndexResponse struct {
	v0
	Partitions []IndexAnswer
}

var _ kmsg.Response = (*IndexResponse)(nil)

func (*IndexResponse) Key() int16                  { return KeyIndex }
func (r *IndexResponse) RequestKind() kmsg.Request { return &IndexRequest{v0: r.v0} }

func (r *IndexResponse) AppendTo(b []byte) []byte {
	b = kbin.AppendArrayLen(b, len(r.Partitions))
	for _, p := range r.Partitions {
		b = kbin.AppendInt16(b, p.ErrorCode)
		b = kbin.AppendInt64(b, p.LogStart)
		b = kbin.AppendInt64(b, p.CompactedEnd)
		b = kbin.AppendInt64(b, p.HighWatermark)
		b = kbin.AppendInt64(b, p.LastStable)
		b = kbin.AppendInt32(b, p.CoordEpoch)
		b = kbin.AppendInt32(b, p.Epoch)
		b = kbin.AppendInt64(b, p.EndOffset)
		b = kbin.AppendArrayLen(b, len(p.Batches))
		for _, x := range p.Batches {
			b = kbin.AppendInt64(b, x.BaseOffset)
			b = kbin.AppendInt64(b, x.LastOffset)
			b = append(b, x.ObjectID[:]...)
			b = kbin.AppendInt64(b, x.Position)
			b = kbin.AppendInt32(b, x.Size)
			b = kbin.AppendInt64(b, x.MaxTimestamp)
			b = kbin.AppendInt32(b, x.Epoch)
			b = kbin.AppendNullableBytes(b, x.Inline)
		}
		b = kbin.AppendArrayLen(b, len(p.Aborted))
		for _, x := range p.Aborted {
			b = kbin.AppendInt64(b, x.ProducerID)
			b = kbin.AppendInt64(b, x.FirstOffset)
			b = kbin.AppendInt64(b, x.LastOffset)
		}
	}
	return b
}

func (r *IndexResponse) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	n, err := arrayLen(&rd, 2+8*4+4+4+8+4+4)
	if err != nil {
		return err
	}
	r.Partitions = make([]IndexAnswer, n)
	for i := range r.Partitions {
		p := &r.Partitions[i]
		p.ErrorCode = rd.Int16()
		p.LogStart = rd.Int64()
		p.CompactedEnd = rd.Int64()
		p.HighWatermark = rd.Int64()
		p.LastStable = rd.Int64()
		p.CoordEpoch = rd.Int32()
		p.Epoch = rd.Int32()
		p.EndOffset = rd.Int64()
		m, err := arrayLen(&rd, locatedSize)
		if err != nil {
			return err
		}
		p.Batches = make([]Located, m)
		for j := range p.Batches {
			x := &p.Batches[j]
			x.BaseOffset = rd.Int64()
			x.LastOffset = rd.Int64()
			x.ObjectID = rd.Uuid()
			x.Position = rd.Int64()
			x.Size = rd.Int32()
			x.MaxTimestamp = rd.Int64()
			x.Epoch = rd.Int32()
			x.Inline = rd.NullableBytes()
		}
		k, err := arrayLen(&rd, 24)
		if err != nil {
			return err
		}
		p.Aborted = make([]Aborted, k)
		for j := range p.Aborted {
			x := &p.Aborted[j]
			x.ProducerID, x.FirstOffset, x.LastOffset = rd.Int64(), rd.Int64(), rd.Int64()
		}
	}
	return done(&rd)
}
