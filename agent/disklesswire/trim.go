package disklesswire

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TrimRequest asks a diskless partition's batch coordinator to raise its
// log start to Offset (DeleteRecords); the answer carries the new start.
type TrimRequest struct {
	v0
	TopicID   [16]byte
	Partition int32
	Offset    int64
}

var _ kmsg.Request = (*TrimRequest)(nil)

func (*TrimRequest) Key() int16                    { return KeyTrim }
func (r *TrimRequest) ResponseKind() kmsg.Response { return &TrimResponse{v0: r.v0} }

func (r *TrimRequest) AppendTo(b []byte) []byte {
	b = append(b, r.TopicID[:]...)
	b = kbin.AppendInt32(b, r.Partition)
	return kbin.AppendInt64(b, r.Offset)
}

func (r *TrimRequest) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.TopicID = rd.Uuid()
	r.Partition = rd.Int32()
	r.Offset = rd.Int64()
	return done(&rd)
}

// TrimResponse answers a TrimRequest.
type TrimResponse struct {
	v0
	ErrorCode int16
	LogStart  int64
}

var _ kmsg.Response = (*TrimResponse)(nil)

func (*TrimResponse) Key() int16                  { return KeyTrim }
func (r *TrimResponse) RequestKind() kmsg.Request { return &TrimRequest{v0: r.v0} }

func (r *TrimResponse) AppendTo(b []byte) []byte {
	b = kbin.AppendInt16(b, r.ErrorCode)
	return kbin.AppendInt64(b, r.LogStart)
}

func (r *TrimResponse) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.ErrorCode = rd.Int16()
	r.LogStart = rd.Int64()
	return done(&rd)
}
