package log

// Transactions in the log, as Kafka's ProducerStateManager and
// TransactionIndex keep them (docs/design.md §9):
//
//   - A transactional batch of a producer with no open transaction opens
//     one at its base offset; a marker (a control batch, see
//     batch.ParseMarker) of that producer closes it, committed or aborted.
//   - The first unstable offset is the smallest first offset of an open
//     transaction. Consumers at read_committed read only below the last
//     stable offset, the lower of it and the high watermark (the caller's).
//   - Every aborted transaction is kept in the index of the segment that
//     holds its marker, as (producer id, first offset, marker offset, last
//     stable offset once it closed): a read_committed Fetch returns the
//     entries that overlap what it returns, and the consumer drops those
//     producers' batches in those ranges.
//
// The index of a segment lives in memory and in <base>.txnindex, written
// with the other indexes when the segment is sealed or the log closes
// (absent when the segment has no aborted transaction). The entries of the
// batches after the newest producer snapshot are rebuilt whenever producer
// state is (recovery, truncation), so a crash never leaves an entry
// without its marker or a marker without its entry.

import (
	"cmp"
	"errors"
	iofs "io/fs"
	"slices"
	"sort"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/internal/vfs"
)

// AbortedTxn is one aborted transaction of a partition: the batches of
// ProducerID in [FirstOffset, LastOffset] are not to be read at
// read_committed (LastOffset is its abort marker's offset).
type AbortedTxn = txnindex.Entry

// LastStableOffset is the offset below which every transaction is decided,
// bounded by highWatermark: the end of what read_committed consumers see.
func (l *Log) LastStableOffset(highWatermark int64) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if f := l.producers.FirstUnstable(); f >= 0 {
		return min(f, highWatermark)
	}
	return highWatermark
}

// AbortedTransactions returns the aborted transactions that overlap
// [from, upper): what a read_committed Fetch that returns batches from
// offset from up to upper must send with them. Like Kafka it reads the
// index of the segment holding from and of later segments until an entry
// shows that every transaction that could overlap was decided.
func (l *Log) AbortedTransactions(from, upper int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []AbortedTxn
	if l.closed || len(l.segs) == 0 {
		return nil
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > from })
	for _, s := range l.segs[max(i-1, 0):] {
		var complete bool
		if out, complete = txnindex.Collect(out, s.aborted, from, upper); complete {
			break
		}
	}
	return out
}

// recordTxnLocked applies a completed transaction to the segment indexes.
func (l *Log) recordTxnLocked(done *producers.Completed) {
	if done == nil || !done.Aborted {
		return
	}
	lso := done.MarkerOffset + 1
	if done.FirstUnstableAfter >= 0 {
		lso = done.FirstUnstableAfter
	}
	s := l.segmentForLocked(done.MarkerOffset)
	s.aborted = append(s.aborted, AbortedTxn{
		ProducerID: done.ProducerID, FirstOffset: done.FirstOffset,
		LastOffset: done.MarkerOffset, LastStableOffset: lso,
	})
}

// dropTxnsFromLocked forgets the aborted transactions whose marker is at
// or after offset, before producer state is replayed from there.
func (l *Log) dropTxnsFromLocked(offset int64) {
	for _, s := range l.segs {
		if s.next <= offset && len(s.aborted) > 0 && s.aborted[len(s.aborted)-1].LastOffset < offset {
			continue
		}
		kept := s.aborted[:0]
		for _, a := range s.aborted {
			if a.LastOffset < offset {
				kept = append(kept, a)
			}
		}
		s.aborted = kept
	}
}

// markerOf reads the marker of a control batch; other batches have none.
// A control batch whose record cannot be read is logged and counts as a
// control record of no known type: it decides nothing.
func (l *Log) markerOf(h *batch.Header, raw []byte) batch.Marker {
	if !h.IsControl() {
		return batch.Marker{Type: -1}
	}
	m, err := batch.ParseMarker(raw)
	if err != nil {
		l.logger.Warn("unreadable control batch", "offset", h.BaseOffset, "err", err)
		return batch.Marker{Type: -1}
	}
	return m
}

// loadTxnIndexLocked reads seg's aborted transactions at recovery. An
// unreadable index makes the producer state replay from the log start,
// which rebuilds every entry.
func (l *Log) loadTxnIndexLocked(seg *segment) error {
	ok, err := seg.loadTxnIndex()
	if err == nil && !ok {
		l.logger.Warn("unreadable transaction index; rebuilding producer state from the log start", "segment", seg.path(txnIndexSuffix))
		l.replayAll = true
	}
	return err
}

// writeTxnIndex persists the segment's aborted transactions, or removes
// the file when there are none.
func (s *segment) writeTxnIndex() error {
	p := s.path(txnIndexSuffix)
	if len(s.aborted) == 0 {
		if err := s.fs.Remove(p); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return storageErr("remove index", p, err)
		}
		return nil
	}
	if err := vfs.WriteFileAtomic(s.fs, s.dir, p, txnindex.Encode(s.aborted)); err != nil {
		return storageErr("write index", p, err)
	}
	return nil
}

// loadTxnIndex reads the segment's aborted transactions; false when the
// file is there but unreadable (the caller rebuilds them).
func (s *segment) loadTxnIndex() (bool, error) {
	s.aborted = nil
	b, err := vfs.ReadFile(s.fs, s.path(txnIndexSuffix), maxIndexFileBytes)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return true, nil
	case errors.Is(err, vfs.ErrTooLarge):
		return false, nil
	case err != nil:
		return false, storageErr("read index", s.path(txnIndexSuffix), err)
	}
	entries, err := txnindex.Decode(b, s.base, s.next)
	if err != nil {
		return false, nil
	}
	s.aborted = entries
	return true, nil
}

// ProducerInfo is one producer's state in a partition (DescribeProducers).
type ProducerInfo struct {
	ProducerID       int64
	ProducerEpoch    int16
	LastSequence     int32 // -1 when none is kept
	LastTimestamp    int64
	CoordinatorEpoch int32 // of its last marker, -1 if none
	TxnStartOffset   int64 // first offset of its open transaction, -1 if none
}

// Producers lists the producers the partition keeps state for, by id.
func (l *Log) Producers() []ProducerInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ProducerInfo, 0, l.producers.Len())
	l.producers.Each(func(e producers.Producer) {
		p := ProducerInfo{ProducerID: e.ID, ProducerEpoch: e.Epoch, LastSequence: -1, LastTimestamp: e.LastTimestamp,
			CoordinatorEpoch: e.CoordinatorEpoch, TxnStartOffset: e.TxnFirst}
		if n := len(e.Batches); n > 0 {
			p.LastSequence = e.Batches[n-1].LastSeq
		}
		out = append(out, p)
	})
	slices.SortFunc(out, func(a, b ProducerInfo) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// TxnOpen reports whether producerID has an open transaction here at
// epoch, so that its next transactional batch at that epoch joins it
// without verification with the coordinator (KIP-890;
// producers.State.TxnOpen has the rule).
func (l *Log) TxnOpen(producerID int64, epoch int16) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.TxnOpen(producerID, epoch)
}
