package partition

import (
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/tiering"
)

// tierLog shows a partition log to tiering, which does not import the
// agent's packages.
type tierLog struct{ l *log.Log }

func segment(s log.SealedSegment) tiering.Segment {
	return tiering.Segment{Base: s.Base, Next: s.Next, Size: s.Size, MaxTimestamp: s.MaxTimestamp, LeaderEpoch: s.LeaderEpoch}
}

func (t tierLog) SealedSegments(from int64) []tiering.Segment {
	segs := t.l.SealedSegments(from)
	out := make([]tiering.Segment, len(segs))
	for i, s := range segs {
		out[i] = segment(s)
	}
	return out
}

func (t tierLog) OpenSealed(base int64) (*tiering.SegmentView, error) {
	v, err := t.l.OpenSealed(base)
	if err != nil {
		return nil, err
	}
	return &tiering.SegmentView{Segment: segment(v.SealedSegment), Log: v.Log, OffsetIndex: v.OffsetIndex,
		TimeIndex: v.TimeIndex, TxnIndex: v.TxnIndex, ProducerSnapshot: v.ProducerSnapshot, Release: v.Close}, nil
}

func (t tierLog) SetRemoteEnd(end int64) { t.l.SetRemoteEnd(end) }
func (t tierLog) RestartAt(offset int64, producerSnapshot []byte) error {
	return t.l.RestartAt(offset, producerSnapshot)
}
func (t tierLog) LogStartOffset() int64               { return t.l.LogStartOffset() }
func (t tierLog) LogEndOffset() int64                 { return t.l.LogEndOffset() }
func (t tierLog) Size() int64                         { return t.l.Size() }
func (t tierLog) DeleteRecordsBefore(off int64) error { return t.l.DeleteRecordsBefore(off) }
