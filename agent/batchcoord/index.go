package batchcoord

import (
	"fmt"
	"slices"
	"sort"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// Located is one committed batch of a diskless partition: its offsets and
// where its bytes are.
type Located struct {
	BaseOffset, LastOffset int64
	ObjectID               [16]byte // zero for an inline batch
	Position               int64    // in the object's data section
	Size                   int32
	MaxTimestamp           int64
	Epoch                  int32 // the coordinator's at commit
	CommitMs               int64 // when its Run was committed
	Inline                 []byte
	// The producer fields of the batch's header, which the producer
	// state at any offset of the index is rebuilt from (retain.go).
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Attributes    int16
}

// header rebuilds the header fields the producer rules read.
func (b Located) header() batch.Header {
	return batch.Header{BaseOffset: b.BaseOffset, LastOffsetDelta: int32(b.LastOffset - b.BaseOffset),
		MaxTimestamp: b.MaxTimestamp, ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch,
		BaseSequence: b.BaseSequence, Attributes: b.Attributes, RecordCount: int32(b.LastOffset-b.BaseOffset) + 1}
}

// Index is one diskless partition's batches from its compacted end to its
// high watermark, in offset order, as the coordinator keeps it in memory
// (docs/design.md §7a): Fetch looks offsets up in it, Runs extend it, and
// object compaction trims it. Not safe for concurrent use; the
// coordinator guards it.
type Index struct {
	start   int64 // the compacted end: offsets below are in the manifest
	end     int64 // the high watermark: the next offset a commit gets
	batches []Located
}

// NewIndex is an empty index whose next offset is end, with everything
// below it compacted (a load starting from a Partition record).
func NewIndex(end int64) *Index { return &Index{start: end, end: end} }

// Start is the compacted end and End the high watermark.
func (x *Index) Start() int64 { return x.start }
func (x *Index) End() int64   { return x.end }

// Len is the number of batches held.
func (x *Index) Len() int { return len(x.batches) }

// Append adds a Run's batches. The run must begin at the index's end and
// its batches follow one another without gaps, as a commit assigns them;
// anything else means the records disagree with each other, and the
// error says at which offset.
func (x *Index) Append(base int64, run Run) error {
	if base != x.end {
		return fmt.Errorf("batchcoord: a run at offset %d, the partition ends at %d", base, x.end)
	}
	next := base
	added := make([]Located, 0, len(run.Batches))
	for i, s := range run.Batches {
		b := base + int64(s.OffsetDelta)
		if b != next || s.LastOffsetDelta < 0 {
			return fmt.Errorf("batchcoord: batch %d of the run at %d starts at %d (last offset delta %d), want %d", i, base, b, s.LastOffsetDelta, next)
		}
		added = append(added, Located{
			BaseOffset: b, LastOffset: b + int64(s.LastOffsetDelta), ObjectID: run.ObjectID,
			Position: s.Position, Size: s.Size, MaxTimestamp: s.MaxTimestamp, Epoch: run.Epoch, Inline: s.Inline, CommitMs: run.CommitMs,
			ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch, BaseSequence: s.BaseSequence, Attributes: s.Attributes,
		})
		next = b + int64(s.LastOffsetDelta) + 1
	}
	x.batches = append(x.batches, added...)
	x.end = next
	return nil
}

// Find returns the batches holding offsets from offset on, in order,
// summing to at most maxBytes but always at least one: what a Fetch at
// offset reads. An offset below Start is not here (the manifest has it);
// one at End has nothing yet.
func (x *Index) Find(offset int64, maxBytes int64) ([]Located, error) {
	if offset < x.start || offset > x.end {
		return nil, fmt.Errorf("batchcoord: offset %d outside [%d, %d]", offset, x.start, x.end)
	}
	i := sort.Search(len(x.batches), func(i int) bool { return x.batches[i].LastOffset >= offset })
	var out []Located
	var n int64
	for ; i < len(x.batches); i++ {
		b := x.batches[i]
		if len(out) > 0 && n+int64(b.Size) > maxBytes {
			break
		}
		out = append(out, b)
		n += int64(b.Size)
	}
	return out, nil
}

// TrimTo drops the batches wholly below end, the new compacted end, which
// must be a batch boundary within the index: object compaction moved
// them into the partition's tiered segments.
func (x *Index) TrimTo(end int64) error {
	if end < x.start || end > x.end {
		return fmt.Errorf("batchcoord: compacted end %d outside [%d, %d]", end, x.start, x.end)
	}
	i := sort.Search(len(x.batches), func(i int) bool { return x.batches[i].BaseOffset >= end })
	if i < len(x.batches) && x.batches[i].BaseOffset != end || i == len(x.batches) && end != x.end {
		return fmt.Errorf("batchcoord: compacted end %d is inside a batch", end)
	}
	x.batches = slices.Clone(x.batches[i:])
	x.start = end
	return nil
}

// Objects returns the ids of the objects the index references, for the
// orphan janitor: none of them may be deleted.
func (x *Index) Objects() map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, b := range x.batches {
		if b.ObjectID != ([16]byte{}) {
			out[b.ObjectID] = true
		}
	}
	return out
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch from a partition's epoch
// history (sorted by epoch, as a Partition record keeps it) and its end:
// the largest epoch at most epoch, and the start offset of the epoch
// after it, or end when it is the latest; -1, -1 when epoch precedes
// every entry, as Kafka answers.
func EndOffsetForEpoch(history []EpochStart, end int64, epoch int32) (int32, int64) {
	i := sort.Search(len(history), func(i int) bool { return history[i].Epoch > epoch })
	if i == 0 {
		return -1, -1
	}
	if i == len(history) {
		return history[i-1].Epoch, end
	}
	return history[i-1].Epoch, history[i].StartOffset
}
