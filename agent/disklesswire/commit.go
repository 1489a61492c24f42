package disklesswire

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The private API keys, far above Kafka's.
const (
	KeyCommit  int16 = 32000
	KeyIndex   int16 = 32001
	KeyGuard   int16 = 32002
	KeyObjects int16 = 32003
	KeyTrim    int16 = 32004
)

// ErrMalformed: a frame that is not a well-formed message.
var ErrMalformed = errors.New("disklesswire: malformed message")

// v0 is the version every message has: the only one so far.
type v0 struct{ version int16 }

func (v *v0) MaxVersion() int16   { return 0 }
func (v *v0) SetVersion(n int16)  { v.version = n }
func (v *v0) GetVersion() int16   { return v.version }
func (v *v0) IsFlexible() bool    { return false }
func (v *v0) checkVersion() error { return versionError(v.version) }

func versionError(n int16) error {
	if n != 0 {
		return fmt.Errorf("%w: version %d", ErrMalformed, n)
	}
	return nil
}

// CommitBatch is one batch of the object to commit: where it lies and
// the header fields the coordinator decides it by.
type CommitBatch struct {
	TopicID         [16]byte
	Partition       int32
	Position        int64
	Size            int32
	LastOffsetDelta int32
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	Attributes      int16
	// Inline is a transaction marker's control batch, committed without
	// an object (the request's object id is then zero); nil otherwise.
	Inline []byte
}

const commitBatchSize = 16 + 4 + 8 + 4 + 4 + 8 + 8 + 2 + 4 + 2 + 4

// CommitRequest asks a coordinator agent to commit an uploaded object's
// batches of the partitions its coordinators own.
type CommitRequest struct {
	v0
	ObjectID [16]byte
	CutMs    int64
	Writer   int32
	Batches  []CommitBatch
}

var _ kmsg.Request = (*CommitRequest)(nil)

func (*CommitRequest) Key() int16                    { return KeyCommit }
func (r *CommitRequest) ResponseKind() kmsg.Response { return &CommitResponse{v0: r.v0} }

func (r *CommitRequest) AppendTo(b []byte) []byte {
	b = append(b, r.ObjectID[:]...)
	b = kbin.AppendInt64(b, r.CutMs)
	b = kbin.AppendInt32(b, r.Writer)
	b = kbin.AppendArrayLen(b, len(r.Batches))
	for _, x := range r.Batches {
		b = append(b, x.TopicID[:]...)
		b = kbin.AppendInt32(b, x.Partition)
		b = kbin.AppendInt64(b, x.Position)
		b = kbin.AppendInt32(b, x.Size)
		b = kbin.AppendInt32(b, x.LastOffsetDelta)
		b = kbin.AppendInt64(b, x.MaxTimestamp)
		b = kbin.AppendInt64(b, x.ProducerID)
		b = kbin.AppendInt16(b, x.ProducerEpoch)
		b = kbin.AppendInt32(b, x.BaseSequence)
		b = kbin.AppendInt16(b, x.Attributes)
		b = kbin.AppendNullableBytes(b, x.Inline)
	}
	return b
}

func (r *CommitRequest) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.ObjectID = rd.Uuid()
	r.CutMs = rd.Int64()
	r.Writer = rd.Int32()
	n, err := arrayLen(&rd, commitBatchSize)
	if err != nil {
		return err
	}
	r.Batches = make([]CommitBatch, n)
	for i := range r.Batches {
		x := &r.Batches[i]
		x.TopicID = rd.Uuid()
		x.Partition = rd.Int32()
		x.Position = rd.Int64()
		x.Size = rd.Int32()
		x.LastOffsetDelta = rd.Int32()
		x.MaxTimestamp = rd.Int64()
		x.ProducerID = rd.Int64()
		x.ProducerEpoch = rd.Int16()
		x.BaseSequence = rd.Int32()
		x.Attributes = rd.Int16()
		x.Inline = rd.NullableBytes()
	}
	return done(&rd)
}

// CommitResult is one batch's outcome.
type CommitResult struct {
	ErrorCode    int16
	ErrorMessage *string
	BaseOffset   int64
	LogStart     int64
	Duplicate    bool
}

// CommitResponse answers a CommitRequest: an error for the whole request
// (for example CLUSTER_AUTHORIZATION_FAILED), or one result per batch.
type CommitResponse struct {
	v0
	ErrorCode    int16
	ErrorMessage *string
	Results      []CommitResult
}

var _ kmsg.Response = (*CommitResponse)(nil)

func (*CommitResponse) Key() int16                  { return KeyCommit }
func (r *CommitResponse) RequestKind() kmsg.Request { return &CommitRequest{v0: r.v0} }

func (r *CommitResponse) AppendTo(b []byte) []byte {
	b = kbin.AppendInt16(b, r.ErrorCode)
	b = kbin.AppendNullableString(b, r.ErrorMessage)
	b = kbin.AppendArrayLen(b, len(r.Results))
	for _, x := range r.Results {
		b = kbin.AppendInt16(b, x.ErrorCode)
		b = kbin.AppendNullableString(b, x.ErrorMessage)
		b = kbin.AppendInt64(b, x.BaseOffset)
		b = kbin.AppendInt64(b, x.LogStart)
		b = kbin.AppendBool(b, x.Duplicate)
	}
	return b
}

func (r *CommitResponse) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.ErrorCode = rd.Int16()
	r.ErrorMessage = rd.NullableString()
	n, err := arrayLen(&rd, 2+2+8+8+1)
	if err != nil {
		return err
	}
	r.Results = make([]CommitResult, n)
	for i := range r.Results {
		x := &r.Results[i]
		x.ErrorCode = rd.Int16()
		x.ErrorMessage = rd.NullableString()
		x.BaseOffset = rd.Int64()
		x.LogStart = rd.Int64()
		x.Duplicate = rd.Bool()
	}
	return done(&rd)
}

// arrayLen reads an array's length and refuses one that the bytes left
// cannot hold at minSize bytes an element.
func arrayLen(rd *kbin.Reader, minSize int) (int, error) {
	n := rd.ArrayLen()
	switch {
	case !rd.Ok():
		return 0, fmt.Errorf("%w: short", ErrMalformed)
	case n < 0:
		return 0, fmt.Errorf("%w: a null array", ErrMalformed)
	case int64(n)*int64(minSize) > int64(len(rd.Src)):
		return 0, fmt.Errorf("%w: an array of %d elements in %d bytes", ErrMalformed, n, len(rd.Src))
	}
	return int(n), nil
}

// done reports a short frame or trailing bytes.
func done(rd *kbin.Reader) error {
	if !rd.Ok() {
		return fmt.Errorf("%w: short", ErrMalformed)
	}
	if len(rd.Src) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(rd.Src))
	}
	return nil
}
