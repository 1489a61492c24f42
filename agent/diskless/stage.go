package diskless

// Staging a compacted segment (compact.go): the planned batches, read
// from their commit objects and stamped, in a .log file, with Kafka's
// offset index (8-byte entries: offset relative to the segment's base,
// position) and time index (12-byte entries: the newest timestamp so far,
// and the relative last offset of the batch that brought it), and the
// transaction index of the aborted transactions whose markers it holds.

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"

	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/disklesswire"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/tiering"
)

// staged is a segment ready for tiering to upload.
type staged struct {
	seg                    tiering.Segment
	path                   string
	offsetIndex, timeIndex []byte
	txnIndex               []byte
}

func (st *staged) view() (*tiering.SegmentView, error) {
	f, err := os.Open(st.path)
	if err != nil {
		return nil, err
	}
	return &tiering.SegmentView{Segment: st.seg, Log: f, OffsetIndex: st.offsetIndex, TimeIndex: st.timeIndex,
		TxnIndex: st.txnIndex, Release: func() { f.Close() }}, nil
}

func (st *staged) remove() { os.Remove(st.path) }

// stage writes plan's batches as a segment of cp's partition.
func (s *Service) stage(ctx context.Context, cp *compactPart, plan []batchcoord.Located) (*staged, error) {
	dir := s.stagingDir(cp.key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base, next := plan[0].BaseOffset, plan[len(plan)-1].LastOffset+1
	st := &staged{path: filepath.Join(dir, fmt.Sprintf("%020d.log", base)),
		seg: tiering.Segment{Base: base, Next: next, MaxTimestamp: -1, LeaderEpoch: plan[len(plan)-1].Epoch}}
	f, err := os.Create(st.path)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		f.Close()
		if !ok {
			os.Remove(st.path)
		}
	}()
	var pos int64
	for _, l := range plan {
		raw, err := s.batchBytes(ctx, wireLocated(l))
		if err != nil {
			return nil, err
		}
		b := append([]byte(nil), raw...)
		batch.SetBaseOffset(b, l.BaseOffset)
		batch.SetPartitionLeaderEpoch(b, l.Epoch)
		if _, err := f.Write(b); err != nil {
			return nil, err
		}
		st.offsetIndex = binary.BigEndian.AppendUint32(st.offsetIndex, uint32(l.BaseOffset-base))
		st.offsetIndex = binary.BigEndian.AppendUint32(st.offsetIndex, uint32(pos))
		if l.MaxTimestamp > st.seg.MaxTimestamp {
			st.seg.MaxTimestamp = l.MaxTimestamp
			st.timeIndex = binary.BigEndian.AppendUint64(st.timeIndex, uint64(l.MaxTimestamp))
			st.timeIndex = binary.BigEndian.AppendUint32(st.timeIndex, uint32(l.LastOffset-base))
		}
		pos += int64(len(b))
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	st.seg.Size = pos
	aborted, err := cp.current().AbortedIn(cp.key, base, next)
	if err != nil {
		return nil, err
	}
	var entries []txnindex.Entry
	for _, a := range aborted {
		if a.LastOffset >= base && a.LastOffset < next { // its marker is in the segment
			entries = append(entries, txnindex.Entry{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, LastStableOffset: a.LastOffset + 1})
		}
	}
	if len(entries) > 0 {
		st.txnIndex = txnindex.Encode(entries)
	}
	ok = true
	return st, nil
}

func wireLocated(l batchcoord.Located) disklesswire.Located {
	return disklesswire.Located{BaseOffset: l.BaseOffset, LastOffset: l.LastOffset, ObjectID: l.ObjectID,
		Position: l.Position, Size: l.Size, MaxTimestamp: l.MaxTimestamp, Epoch: l.Epoch, Inline: l.Inline}
}
