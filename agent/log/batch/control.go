package batch

// Control batches carry transaction markers: one record whose key says
// whether the transaction committed or aborted and whose value names the
// coordinator epoch that wrote it (Kafka's ControlRecordType and
// EndTransactionMarker):
//
//	key:   version int16 (0) | type int16 (0 abort, 1 commit)
//	value: version int16 (0) | coordinator epoch int32
//
// A marker batch is never compressed, has AttrTransactional and
// AttrControl set, and carries the producer id and epoch of the
// transaction it ends, with base sequence -1.

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the kind of a control record.
type ControlType int16

const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "abort"
	case ControlCommit:
		return "commit"
	}
	return fmt.Sprintf("control type %d", int16(t))
}

// Marker is the content of a transaction marker.
type Marker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

const (
	controlKeySize   = 4
	controlValueSize = 6
)

// ParseMarker decodes the marker of raw, one whole control batch. A
// control record of a type other than abort or commit (Kafka reserves
// others, and a future version may write them) is returned as is; callers
// that act on markers check Type.
func ParseMarker(raw []byte) (Marker, error) {
	h, recs, err := Records(raw, controlKeySize+controlValueSize+64)
	if err != nil {
		return Marker{}, err
	}
	if !h.IsControl() || len(recs) != 1 {
		return Marker{}, fmt.Errorf("%w: not a control batch of one record", ErrInvalidRecord)
	}
	return ParseControlRecord(recs[0].Key, recs[0].Value)
}

// ParseControlRecord decodes the key and value of one control record, as
// a client that keeps control records (the console's browser) sees them;
// types other than abort and commit are returned as ParseMarker returns
// them.
func ParseControlRecord(k, v []byte) (Marker, error) {
	if len(k) < controlKeySize {
		return Marker{}, fmt.Errorf("%w: control record key of %d bytes", ErrInvalidRecord, len(k))
	}
	m := Marker{Type: ControlType(binary.BigEndian.Uint16(k[2:]))}
	if m.Type == ControlAbort || m.Type == ControlCommit {
		if len(v) < controlValueSize {
			return Marker{}, fmt.Errorf("%w: transaction marker value of %d bytes", ErrInvalidRecord, len(v))
		}
		m.CoordinatorEpoch = int32(binary.BigEndian.Uint32(v[2:]))
	}
	return m, nil
}

// BuildMarker encodes a transaction marker batch for the producer id and
// epoch of the transaction it ends. The caller sets the base offset (the
// log does) and the partition leader epoch.
func BuildMarker(producerID int64, producerEpoch int16, m Marker, timestamp int64) ([]byte, error) {
	key := binary.BigEndian.AppendUint16(make([]byte, 2, controlKeySize), uint16(m.Type))
	value := binary.BigEndian.AppendUint32(make([]byte, 2, controlValueSize), uint32(m.CoordinatorEpoch))
	return Build(BuildOptions{
		BaseTimestamp:        timestamp,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         -1,
		PartitionLeaderEpoch: -1,
		Attributes:           AttrTransactional | AttrControl,
	}, []Record{{Key: key, Value: value}})
}
