package producers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrBadSnapshot is a payload Decode refuses.
var ErrBadSnapshot = errors.New("producers: bad snapshot")

// maxProducers bounds a snapshot's producer count at decode.
const maxProducers = 1 << 22

const (
	producerBytes    = 8 + 2 + 8 // id, epoch, last timestamp
	transactionBytes = 8 + 4     // open transaction's first offset, coordinator epoch
	batchBytes       = 4 + 4 + 8 + 8
)

// Encode returns the snapshot payload of the state as of offset (every
// batch below it), in the layout of the package doc.
func (s *State) Encode(offset int64) []byte {
	ids := make([]int64, 0, len(s.m))
	for id := range s.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	p := binary.BigEndian.AppendUint64(nil, uint64(offset))
	p = binary.BigEndian.AppendUint32(p, uint32(len(ids)))
	for _, id := range ids {
		e := s.m[id]
		p = binary.BigEndian.AppendUint64(p, uint64(id))
		p = binary.BigEndian.AppendUint16(p, uint16(e.Epoch))
		p = binary.BigEndian.AppendUint64(p, uint64(e.LastTimestamp))
		p = binary.BigEndian.AppendUint64(p, uint64(e.TxnFirst))
		p = binary.BigEndian.AppendUint32(p, uint32(e.CoordinatorEpoch))
		p = append(p, byte(len(e.Batches)))
		for _, b := range e.Batches {
			p = binary.BigEndian.AppendUint32(p, uint32(b.FirstSeq))
			p = binary.BigEndian.AppendUint32(p, uint32(b.LastSeq))
			p = binary.BigEndian.AppendUint64(p, uint64(b.FirstOffset))
			p = binary.BigEndian.AppendUint64(p, uint64(b.LastOffset))
		}
	}
	return p
}

// Decode reads a payload Encode wrote (withTxn) or one of the layout from
// before transactions (!withTxn), whose producers have no open
// transaction and no marker. It returns the offset the state was taken
// at. The State does not refer to p. Any payload that is not exactly one
// encoding, producers in ascending id order, is refused with
// ErrBadSnapshot.
func Decode(p []byte, withTxn bool) (int64, *State, error) {
	bad := func(what string) (int64, *State, error) {
		return 0, nil, fmt.Errorf("%w: %s", ErrBadSnapshot, what)
	}
	if len(p) < 12 {
		return bad("header")
	}
	offset := int64(binary.BigEndian.Uint64(p))
	n := binary.BigEndian.Uint32(p[8:])
	p = p[12:]
	if n > maxProducers {
		return bad("count")
	}
	s := New()
	prev := int64(-1)
	for i := uint32(0); i < n; i++ {
		if len(p) < producerBytes+1 {
			return bad("entry")
		}
		id := int64(binary.BigEndian.Uint64(p))
		e := newProducer(id, int16(binary.BigEndian.Uint16(p[8:])))
		e.LastTimestamp = int64(binary.BigEndian.Uint64(p[10:]))
		p = p[producerBytes:]
		if withTxn {
			if len(p) < transactionBytes+1 {
				return bad("entry")
			}
			e.TxnFirst, e.CoordinatorEpoch = int64(binary.BigEndian.Uint64(p)), int32(binary.BigEndian.Uint32(p[8:]))
			if e.TxnFirst < -1 {
				return bad("transaction")
			}
			p = p[transactionBytes:]
		}
		k := int(p[0])
		p = p[1:]
		if k > BatchesKept || len(p) < k*batchBytes || id < 0 {
			return bad("batches")
		}
		// Encode writes each id once, ascending: anything else would
		// decode to a state that encodes differently.
		if id <= prev {
			return bad("producer order")
		}
		prev = id
		for j := 0; j < k; j++ {
			e.Batches = append(e.Batches, Batch{
				FirstSeq:    int32(binary.BigEndian.Uint32(p)),
				LastSeq:     int32(binary.BigEndian.Uint32(p[4:])),
				FirstOffset: int64(binary.BigEndian.Uint64(p[8:])),
				LastOffset:  int64(binary.BigEndian.Uint64(p[16:])),
			})
			p = p[batchBytes:]
		}
		s.m[id] = e
		if e.TxnFirst >= 0 {
			s.open[id] = e.TxnFirst
		}
	}
	switch {
	case len(p) != 0:
		return bad("trailing bytes")
	case offset < 0:
		return bad("offset")
	}
	return offset, s, nil
}
