package disklesswire

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ObjectsRequest asks an agent whether the batch coordinators it leads
// reference commit objects: the orphan janitor deletes an old object
// that no coordinator agent claims.
type ObjectsRequest struct {
	v0
	IDs [][16]byte
}

var _ kmsg.Request = (*ObjectsRequest)(nil)

func (*ObjectsRequest) Key() int16                    { return KeyObjects }
func (r *ObjectsRequest) ResponseKind() kmsg.Response { return &ObjectsResponse{v0: r.v0} }

func (r *ObjectsRequest) AppendTo(b []byte) []byte {
	b = kbin.AppendArrayLen(b, len(r.IDs))
	for _, id := range r.IDs {
		b = append(b, id[:]...)
	}
	return b
}

func (r *ObjectsRequest) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	n, err := arrayLen(&rd, 16)
	if err != nil {
		return err
	}
	r.IDs = make([][16]byte, n)
	for i := range r.IDs {
		r.IDs[i] = rd.Uuid()
	}
	return done(&rd)
}

// ObjectsResponse answers an ObjectsRequest: an error when some
// coordinator this agent leads could not be asked (the answer is then
// unknown, and the janitor keeps every object), else one flag per id.
type ObjectsResponse struct {
	v0
	ErrorCode  int16
	Referenced []bool
}

var _ kmsg.Response = (*ObjectsResponse)(nil)

func (*ObjectsResponse) Key() int16                  { return KeyObjects }
func (r *ObjectsResponse) RequestKind() kmsg.Request { return &ObjectsRequest{v0: r.v0} }

func (r *ObjectsResponse) AppendTo(b []byte) []byte {
	b = kbin.AppendInt16(b, r.ErrorCode)
	b = kbin.AppendArrayLen(b, len(r.Referenced))
	for _, x := range r.Referenced {
		b = kbin.AppendBool(b, x)
	}
	return b
}

func (r *ObjectsResponse) ReadFrom(src []byte) error {
	if err := r.checkVersion(); err != nil {
		return err
	}
	rd := kbin.Reader{Src: src}
	r.ErrorCode = rd.Int16()
	n, err := arrayLen(&rd, 1)
	if err != nil {
		return err
	}
	r.Referenced = make([]bool, n)
	for i := range r.Referenced {
		r.Referenced[i] = rd.Bool()
	}
	return done(&rd)
}
