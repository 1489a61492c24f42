package disklesswire

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GuardRequest asks a diskless partition's batch coordinator to stand a
// KIP-890 verification guard for a producer at an epoch, before the
// agent that received a transactional batch verifies it with the
// transaction coordinator: a marker for the producer removes the guard,
// and a batch that would open a transaction commits only while its
// guard stands.
type GuardRequest struct {
	v0
	TopicID       [16]byte
	Partition     int32
	ProducerID    int64
	ProducerEpoch int16
}

var _ kmsg.Request = (*GuardRequest)(nil)

func (*GuardRequest) Key() int16                    { return KeyGuard }
func (r *GuardRequest) ResponseKind() kmsg.Response { return &GuardResponse{v0: r.v0} }

func (r *GuardRequest) AppendTo(b []byte) []byte {
	b = append(b, r.TopicID[:]...)
	b = kbin.AppendInt32(b, r.Partition)
	b = kbin.AppendInt64(b, r.ProducerID)
	return kbin.AppendInt16(b, r.ProducerEpoch)
}

func (r *GuardRequest) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.TopicID = rd.Uuid()
	r.Partition = rd.Int32()
	r.ProducerID = rd.Int64()
	r.ProducerEpoch = rd.Int16()
	return done(&rd)
}

// GuardResponse answers a GuardRequest.
type GuardResponse struct {
	v0
	ErrorCode int16
}

var _ kmsg.Response = (*GuardResponse)(nil)

func (*GuardResponse) Key() int16                  { return KeyGuard }
func (r *GuardResponse) RequestKind() kmsg.Request { return &GuardRequest{v0: r.v0} }

func (r *GuardResponse) AppendTo(b []byte) []byte { return kbin.AppendInt16(b, r.ErrorCode) }

func (r *GuardResponse) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.ErrorCode = rd.Int16()
	return done(&rd)
}
