package batchcoord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Record key types.
const (
	KeyRun       int16 = 0
	KeyPartition int16 = 1
)

const valueVersion int16 = 0

// ErrBadRecord: the bytes are not a record this package writes.
var ErrBadRecord = errors.New("batchcoord: malformed record")

// maxBatchesPerRun bounds a Run's batch count as read, so that a corrupt
// count cannot make a reader allocate: a run holds the batches of one
// partition in one commit object.
const maxBatchesPerRun = 1 << 20

// maxEpochs bounds a Partition record's epoch history as read.
const maxEpochs = 1 << 20

// PartitionKey names a diskless partition.
type PartitionKey struct {
	TopicID   [16]byte
	Partition int32
}

// RunKey is a Run record's key: a partition and the offset its first
// batch got.
type RunKey struct {
	PartitionKey
	BaseOffset int64
}

// StoredBatch is where one committed batch lives and what the
// coordinator needs of its header.
type StoredBatch struct {
	OffsetDelta     int32 // from the Run's base offset
	LastOffsetDelta int32 // the batch's own
	Position        int64 // in the object's data section
	Size            int32
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	Attributes      int16
	Inline          []byte // a transaction marker committed without an object; nil otherwise
}

const storedBatchSize = 4 + 4 + 8 + 4 + 8 + 8 + 2 + 4 + 2 + 4

// Run is the value of a Run record: one commit's batches of one
// partition.
type Run struct {
	ObjectID [16]byte // zero for a run of inline batches
	Epoch    int32    // the coordinator's, at commit
	CommitMs int64
	Batches  []StoredBatch
}

// EpochStart is one entry of a partition's epoch history: the first
// offset committed at Epoch.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// Partition is the value of a Partition record.
type Partition struct {
	LogStart     int64
	CompactedEnd int64
	Epochs       []EpochStart
	Snapshot     []byte // producer state at CompactedEnd
}

// EncodeRunKey and the encoders below write a record's key or value.
func EncodeRunKey(k RunKey) []byte {
	b := make([]byte, 0, 2+20+8)
	b = binary.BigEndian.AppendUint16(b, uint16(KeyRun))
	b = appendPartitionKey(b, k.PartitionKey)
	return binary.BigEndian.AppendUint64(b, uint64(k.BaseOffset))
}

func EncodePartitionKey(k PartitionKey) []byte {
	b := make([]byte, 0, 2+20)
	b = binary.BigEndian.AppendUint16(b, uint16(KeyPartition))
	return appendPartitionKey(b, k)
}

func appendPartitionKey(b []byte, k PartitionKey) []byte {
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

func EncodeRun(r Run) ([]byte, error) {
	if len(r.Batches) == 0 || len(r.Batches) > maxBatchesPerRun {
		return nil, fmt.Errorf("batchcoord: a run of %d batches (1 to %d)", len(r.Batches), maxBatchesPerRun)
	}
	b := make([]byte, 0, 2+16+4+8+4+len(r.Batches)*storedBatchSize)
	b = binary.BigEndian.AppendUint16(b, uint16(valueVersion))
	b = append(b, r.ObjectID[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(r.Epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(r.CommitMs))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Batches)))
	for _, s := range r.Batches {
		if len(s.Inline) > math.MaxInt32 {
			return nil, fmt.Errorf("batchcoord: an inline batch of %d bytes", len(s.Inline))
		}
		b = binary.BigEndian.AppendUint32(b, uint32(s.OffsetDelta))
		b = binary.BigEndian.AppendUint32(b, uint32(s.LastOffsetDelta))
		b = binary.BigEndian.AppendUint64(b, uint64(s.Position))
		b = binary.BigEndian.AppendUint32(b, uint32(s.Size))
		b = binary.BigEndian.AppendUint64(b, uint64(s.MaxTimestamp))
		b = binary.BigEndian.AppendUint64(b, uint64(s.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(s.ProducerEpoch))
		b = binary.BigEndian.AppendUint32(b, uint32(s.BaseSequence))
		b = binary.BigEndian.AppendUint16(b, uint16(s.Attributes))
		if s.Inline == nil {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(s.Inline)))
		b = append(b, s.Inline...)
	}
	return b, nil
}

func EncodePartition(p Partition) ([]byte, error) {
	if len(p.Epochs) > maxEpochs || len(p.Snapshot) > math.MaxInt32 {
		return nil, fmt.Errorf("batchcoord: a partition record of %d epochs and a %d-byte snapshot", len(p.Epochs), len(p.Snapshot))
	}
	b := make([]byte, 0, 2+8+8+4+12*len(p.Epochs)+4+len(p.Snapshot))
	b = binary.BigEndian.AppendUint16(b, uint16(valueVersion))
	b = binary.BigEndian.AppendUint64(b, uint64(p.LogStart))
	b = binary.BigEndian.AppendUint64(b, uint64(p.CompactedEnd))
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.Epochs)))
	for _, e := range p.Epochs {
		b = binary.BigEndian.AppendUint32(b, uint32(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.StartOffset))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(p.Snapshot)))
	return append(b, p.Snapshot...), nil
}

// KeyType returns a record key's type.
func KeyType(key []byte) (int16, error) {
	if len(key) < 2 {
		return 0, fmt.Errorf("%w: a key of %d bytes", ErrBadRecord, len(key))
	}
	return int16(binary.BigEndian.Uint16(key)), nil
}

// DecodeRunKey and the decoders below read what the encoders wrote,
// refusing anything else, including trailing bytes.
func DecodeRunKey(key []byte) (RunKey, error) {
	r := reader{b: key}
	if t := r.i16(); t != KeyRun {
		return RunKey{}, fmt.Errorf("%w: key type %d, want a run's (%d)", ErrBadRecord, t, KeyRun)
	}
	k := RunKey{PartitionKey: r.partitionKey(), BaseOffset: r.i64()}
	return k, r.done("run key")
}

func DecodePartitionKey(key []byte) (PartitionKey, error) {
	r := reader{b: key}
	if t := r.i16(); t != KeyPartition {
		return PartitionKey{}, fmt.Errorf("%w: key type %d, want a partition's (%d)", ErrBadRecord, t, KeyPartition)
	}
	k := r.partitionKey()
	return k, r.done("partition key")
}

func DecodeRun(value []byte) (Run, error) {
	r := reader{b: value}
	if v := r.i16(); v != valueVersion {
		return Run{}, fmt.Errorf("%w: run value version %d", ErrBadRecord, v)
	}
	var run Run
	copy(run.ObjectID[:], r.bytes(16))
	run.Epoch, run.CommitMs = r.i32(), r.i64()
	n := r.i32()
	if r.err == nil && (n <= 0 || n > maxBatchesPerRun || int(n) > len(r.b)/storedBatchSize) {
		return Run{}, fmt.Errorf("%w: a run of %d batches in %d bytes", ErrBadRecord, n, len(value))
	}
	for i := int32(0); i < n && r.err == nil; i++ {
		s := StoredBatch{
			OffsetDelta: r.i32(), LastOffsetDelta: r.i32(), Position: r.i64(), Size: r.i32(),
			MaxTimestamp: r.i64(), ProducerID: r.i64(), ProducerEpoch: r.i16(), BaseSequence: r.i32(),
			Attributes: r.i16(),
		}
		if l := r.i32(); l >= 0 {
			s.Inline = append([]byte{}, r.bytes(int(l))...)
		} else if l != -1 {
			r.fail("inline length %d", l)
		}
		run.Batches = append(run.Batches, s)
	}
	return run, r.done("run value")
}

func DecodePartition(value []byte) (Partition, error) {
	r := reader{b: value}
	if v := r.i16(); v != valueVersion {
		return Partition{}, fmt.Errorf("%w: partition value version %d", ErrBadRecord, v)
	}
	p := Partition{LogStart: r.i64(), CompactedEnd: r.i64()}
	n := r.i32()
	if r.err == nil && (n < 0 || n > maxEpochs || int(n) > len(r.b)/12) {
		return Partition{}, fmt.Errorf("%w: %d epochs in %d bytes", ErrBadRecord, n, len(value))
	}
	for i := int32(0); i < n && r.err == nil; i++ {
		p.Epochs = append(p.Epochs, EpochStart{Epoch: r.i32(), StartOffset: r.i64()})
	}
	switch l := r.i32(); {
	case r.err != nil:
	case l < 0:
		r.fail("snapshot length %d", l)
	case l > 0:
		p.Snapshot = append([]byte{}, r.bytes(int(l))...)
	}
	return p, r.done("partition value")
}

// reader reads big-endian fields, remembering the first shortfall.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrBadRecord}, args...)...)
	}
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("%d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) i16() int16 {
	if b := r.bytes(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) i32() int32 {
	if b := r.bytes(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) i64() int64 {
	if b := r.bytes(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) partitionKey() PartitionKey {
	var k PartitionKey
	copy(k.TopicID[:], r.bytes(16))
	k.Partition = r.i32()
	return k
}

func (r *reader) done(what string) error {
	if r.err == nil && len(r.b) > 0 {
		r.fail("%d bytes after the %s", len(r.b), what)
	}
	return r.err
}
