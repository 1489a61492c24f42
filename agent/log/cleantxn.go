package log

import (
	"cmp"
	"slices"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// The cleaner's transaction rules (Kafka's CleanedTransactionMetadata,
// KIP-98 and KIP-534), applied batch by batch in offset order:
//
//   - A transactional data batch whose producer has an aborted
//     transaction in progress at its offset (the segments' aborted-
//     transaction indexes say which: producer, first offset, marker) is
//     aborted data: it is removed, and its records never enter the offset
//     map, so they cannot shadow a committed value. Any other
//     transactional batch is committed data, compacted like any record.
//   - An abort marker whose transaction had data read in this pass is
//     kept, and so is its index entry, in the cleaned segment; one whose
//     data is gone may go, and its index entry goes at once. A commit
//     marker may go when no batch of its transaction was read in the pass.
//   - A marker that may go is first stamped with a delete horizon, now +
//     delete.retention.ms (batch.WithDeleteHorizon), and dropped by the
//     first pass after the horizon; consumers that were reading the
//     transaction then have had delete.retention.ms to read its marker.
//
// Kafka keeps this state per group of cleaned segments; here it lasts the
// whole pass, which reads the log from its start in order. The difference
// only ever keeps a marker longer: a commit marker whose transaction's
// batches lie in an earlier group stays until those batches are gone,
// and a marker must outlive its data, or a replay of producer state from
// the log start would find the transaction open.
//
// A txnCleaner is owned by one pass; it is not safe for concurrent use.
type txnCleaner struct {
	// pending are the aborted transactions not reached yet, by first
	// offset.
	pending []AbortedTxn
	// aborted holds each producer's aborted transaction in progress, and
	// whether a batch of it was read.
	aborted map[int64]*abortedRead
	// committed holds the producers with a transactional batch read whose
	// transaction is not aborted: their commit marker stays.
	committed map[int64]struct{}
	// index collects the entries kept, in marker order, for the segment
	// being written (takeIndex).
	index []AbortedTxn
}

type abortedRead struct {
	txn  AbortedTxn
	read bool
}

// newTxnCleaner tracks a pass that reads batches from offset from on;
// aborted are the log's aborted transactions (any order, not retained),
// of which those whose marker is before from are ignored.
func newTxnCleaner(aborted []AbortedTxn, from int64) *txnCleaner {
	t := &txnCleaner{aborted: map[int64]*abortedRead{}, committed: map[int64]struct{}{}}
	for _, a := range aborted {
		if a.LastOffset >= from {
			t.pending = append(t.pending, a)
		}
	}
	slices.SortFunc(t.pending, func(a, b AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return t
}

// reach starts the aborted transactions that begin at or before offset.
// A producer has one transaction at a time, so one already in progress
// is the one its batches belong to.
func (t *txnCleaner) reach(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := t.pending[0]
		t.pending = t.pending[1:]
		if _, ok := t.aborted[a.ProducerID]; !ok {
			t.aborted[a.ProducerID] = &abortedRead{txn: a}
		}
	}
}

// abortedData reports whether h, a data batch, belongs to an aborted
// transaction, and records that its transaction still has data.
func (t *txnCleaner) abortedData(h *batch.Header) bool {
	t.reach(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if a, ok := t.aborted[h.ProducerID]; ok {
		a.read = true
		return true
	}
	t.committed[h.ProducerID] = struct{}{}
	return false
}

// markerRemovable reports whether the control batch h (raw) may be
// removed once its delete horizon passes: its transaction has no data
// left. A control record of another type, or one that cannot be read, is
// kept, as Kafka keeps it.
func (t *txnCleaner) markerRemovable(h *batch.Header, raw []byte) bool {
	t.reach(h.LastOffset())
	m, err := batch.ParseMarker(raw)
	if err != nil {
		return false
	}
	switch m.Type {
	case batch.ControlAbort:
		a, ok := t.aborted[h.ProducerID]
		delete(t.aborted, h.ProducerID)
		if ok && a.read {
			t.index = append(t.index, a.txn)
			return false
		}
		return true
	case batch.ControlCommit:
		_, ok := t.committed[h.ProducerID]
		delete(t.committed, h.ProducerID)
		return !ok
	}
	return false
}

// takeIndex returns the aborted-transaction entries kept since the last
// call: the index of the segment just written.
func (t *txnCleaner) takeIndex() []AbortedTxn {
	out := t.index
	t.index = nil
	return out
}

// cleanBatch is the cleaner's whole rule for one batch of a pass: the
// transaction rules above, then filterBatch's record rules for data that
// is not aborted. It returns the batch to write (raw, a rebuilt copy, or
// nil to drop it) and the records dropped.
func cleanBatch(h *batch.Header, raw []byte, p *cleanPlan, m *OffsetMap, end int64, dropTombstones bool) ([]byte, int64, error) {
	if h.IsControl() {
		if !p.txns.markerRemovable(h, raw) {
			return raw, 0, nil
		}
		horizon, ok := h.DeleteHorizon()
		switch {
		case !ok:
			out, err := batch.WithDeleteHorizon(raw, p.nowMs+p.cfg.DeleteRetention.Milliseconds())
			return out, 0, err
		case horizon <= p.nowMs:
			return nil, int64(h.RecordCount), nil
		}
		return raw, 0, nil
	}
	if p.txns.abortedData(h) {
		// The producer's last batch stays, emptied, as for any batch
		// (filterBatch): its sequence outlives the cleaning.
		if last, ok := p.producerLast[h.ProducerID]; ok && last == h.LastOffset() {
			if h.RecordCount == 0 {
				return raw, 0, nil
			}
			out, err := batch.Emptied(raw)
			return out, int64(h.RecordCount), err
		}
		return nil, int64(h.RecordCount), nil
	}
	return filterBatch(h, raw, m, end, dropTombstones, p.producerLast)
}
