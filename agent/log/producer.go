package log

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// producerBatchesKept is how many recent batches per producer id are kept
// to answer retries with their original offsets (Kafka's 5, which is also
// the most in-flight requests an idempotent client may have).
const producerBatchesKept = 5

// maxSnapshotProducers bounds a snapshot file's producer count at decode.
const maxSnapshotProducers = 1 << 22

type batchMeta struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

type producerEntry struct {
	epoch   int16
	lastTs  int64       // MaxTimestamp of its last batch (expiry)
	batches []batchMeta // oldest first, at most producerBatchesKept
	// txnFirst is the first offset of its open transaction, -1 if none
	// (txn.go); coordEpoch the coordinator epoch of its last marker.
	txnFirst   int64
	coordEpoch int32
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, txnFirst: -1, coordEpoch: -1}
}

// producerState is the idempotence and transaction state of one
// partition, with Kafka's ProducerStateManager rules. Guarded by Log.mu.
type producerState struct {
	m map[int64]*producerEntry
	// open maps the producers with an open transaction to its first
	// offset: the few entries the last stable offset depends on.
	open map[int64]int64
}

func newProducerState() producerState {
	return producerState{m: map[int64]*producerEntry{}, open: map[int64]int64{}}
}

// firstUnstable is the first offset of the oldest open transaction, -1 if
// none is open.
func (ps *producerState) firstUnstable() int64 {
	first := int64(-1)
	for _, off := range ps.open {
		if first < 0 || off < first {
			first = off
		}
	}
	return first
}

// idempotent reports whether a batch takes part in sequence checks.
// Control batches (transaction markers) carry no sequence.
func idempotent(h *batch.Header) bool {
	return h.ProducerID >= 0 && h.BaseSequence >= 0 && !h.IsControl()
}

func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// check decides a batch before it is written: a duplicate (the cached
// batch it repeats) or an error, or (nil, nil) to append. m is the marker
// of a control batch.
func (ps *producerState) check(h *batch.Header, m batch.Marker) (*batchMeta, error) {
	if h.IsControl() {
		return nil, ps.checkMarker(h, m)
	}
	if !idempotent(h) {
		return nil, nil
	}
	e, ok := ps.m[h.ProducerID]
	if !ok {
		// Unknown producer: its state may have expired or been removed by
		// retention, so any sequence is accepted, as Kafka does.
		return nil, nil
	}
	first, last := h.BaseSequence, h.LastSequence()
	switch {
	case h.ProducerEpoch < e.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	case h.ProducerEpoch > e.epoch:
		if first != 0 {
			return nil, fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first)
		}
		return nil, nil
	case e.txnFirst >= 0 && !h.IsTransactional():
		return nil, fmt.Errorf("%w: producer %d has an open transaction but sent a non-transactional batch", ErrInvalidTxnState, h.ProducerID)
	}
	for i := range e.batches {
		if b := &e.batches[i]; b.firstSeq == first && b.lastSeq == last {
			dup := *b
			return &dup, nil
		}
	}
	if len(e.batches) == 0 {
		return nil, nil
	}
	if want := nextSeq(e.batches[len(e.batches)-1].lastSeq); first != want {
		return nil, fmt.Errorf("%w: producer %d epoch %d sequence %d, want %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first, want)
	}
	return nil, nil
}

// checkMarker refuses a marker from a fenced producer epoch or an older
// coordinator than the producer's last marker, as Kafka does.
func (ps *producerState) checkMarker(h *batch.Header, m batch.Marker) error {
	e, ok := ps.m[h.ProducerID]
	switch {
	case !ok:
		return nil
	case h.ProducerEpoch < e.epoch:
		return fmt.Errorf("%w: marker for producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	case m.CoordinatorEpoch < e.coordEpoch:
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, last %d", ErrCoordinatorFenced, h.ProducerID, m.CoordinatorEpoch, e.coordEpoch)
	}
	return nil
}

// update records a written batch (h.BaseOffset is its real offset; m is
// the marker of a control batch) and returns the transaction a marker
// completed, if any.
func (ps *producerState) update(h *batch.Header, m batch.Marker) *completedTxn {
	if h.ProducerID < 0 {
		return nil
	}
	e, ok := ps.m[h.ProducerID]
	if !ok {
		e = newProducerEntry(h.ProducerEpoch)
		ps.m[h.ProducerID] = e
	}
	if h.ProducerEpoch > e.epoch {
		e.epoch, e.batches = h.ProducerEpoch, e.batches[:0]
	}
	e.lastTs = max(e.lastTs, h.MaxTimestamp)
	switch {
	case h.IsControl():
		if m.Type != batch.ControlAbort && m.Type != batch.ControlCommit {
			return nil
		}
		// A marker for a producer with nothing open here (the
		// partition was added but never written, or its state
		// expired) completes an empty transaction at the marker, as
		// in Kafka.
		first := e.txnFirst
		if first < 0 {
			first = h.BaseOffset
		}
		e.txnFirst, e.coordEpoch = -1, m.CoordinatorEpoch
		delete(ps.open, h.ProducerID)
		return &completedTxn{
			producerID: h.ProducerID, firstOffset: first, markerOffset: h.BaseOffset,
			aborted: m.Type == batch.ControlAbort, firstUnstableAfter: ps.firstUnstable(),
		}
	case h.IsTransactional() && e.txnFirst < 0:
		e.txnFirst = h.BaseOffset
		ps.open[h.ProducerID] = h.BaseOffset
	}
	if !idempotent(h) || h.ProducerEpoch < e.epoch {
		return nil
	}
	if len(e.batches) == producerBatchesKept {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerBatchesKept-1]
	}
	e.batches = append(e.batches, batchMeta{
		firstSeq: h.BaseSequence, lastSeq: h.LastSequence(),
		firstOffset: h.BaseOffset, lastOffset: h.LastOffset(),
	})
	return nil
}

// expire drops producers whose last batch timestamp is ttl older than now.
func (ps *producerState) expire(nowMs int64, ttlMs int64) int {
	if ttlMs <= 0 {
		return 0
	}
	n := 0
	for id, e := range ps.m {
		// An open transaction keeps its producer: the last stable offset
		// waits for its marker (or the coordinator's timeout abort).
		if e.txnFirst < 0 && nowMs-e.lastTs >= ttlMs {
			delete(ps.m, id)
			n++
		}
	}
	return n
}

// encodeSnapshot writes the state as of offset (every batch below it).
//
//	offset i64 | count u32 | count x (producer id i64 | epoch i16 |
//	last timestamp i64 | open transaction's first offset i64 (-1 none) |
//	last marker's coordinator epoch i32 | n u8 | n x (first seq i32 |
//	last seq i32 | first offset i64 | last offset i64))
//
// Snapshots written before transactions (magicProducerV1) lack the two
// transaction fields and still load.
func (ps *producerState) encodeSnapshot(offset int64) []byte {
	ids := make([]int64, 0, len(ps.m))
	for id := range ps.m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	p := binary.BigEndian.AppendUint64(nil, uint64(offset))
	p = binary.BigEndian.AppendUint32(p, uint32(len(ids)))
	for _, id := range ids {
		e := ps.m[id]
		p = binary.BigEndian.AppendUint64(p, uint64(id))
		p = binary.BigEndian.AppendUint16(p, uint16(e.epoch))
		p = binary.BigEndian.AppendUint64(p, uint64(e.lastTs))
		p = binary.BigEndian.AppendUint64(p, uint64(e.txnFirst))
		p = binary.BigEndian.AppendUint32(p, uint32(e.coordEpoch))
		p = append(p, byte(len(e.batches)))
		for _, b := range e.batches {
			p = binary.BigEndian.AppendUint32(p, uint32(b.firstSeq))
			p = binary.BigEndian.AppendUint32(p, uint32(b.lastSeq))
			p = binary.BigEndian.AppendUint64(p, uint64(b.firstOffset))
			p = binary.BigEndian.AppendUint64(p, uint64(b.lastOffset))
		}
	}
	return encodeFrame(magicProducer, p)
}

func decodeSnapshot(b []byte) (int64, producerState, error) {
	ps := newProducerState()
	p, err := decodeFrame(magicProducer, b)
	txn := err == nil
	if !txn {
		var v1Err error
		if p, v1Err = decodeFrame(magicProducerV1, b); v1Err != nil {
			return 0, ps, err
		}
	}
	bad := func(what string) (int64, producerState, error) {
		return 0, newProducerState(), fmt.Errorf("%w: producer snapshot %s", errBadStateFile, what)
	}
	if len(p) < 12 {
		return bad("header")
	}
	offset := int64(binary.BigEndian.Uint64(p))
	n := binary.BigEndian.Uint32(p[8:])
	p = p[12:]
	if n > maxSnapshotProducers {
		return bad("count")
	}
	for i := uint32(0); i < n; i++ {
		if len(p) < 19 {
			return bad("entry")
		}
		id := int64(binary.BigEndian.Uint64(p))
		e := newProducerEntry(int16(binary.BigEndian.Uint16(p[8:])))
		e.lastTs = int64(binary.BigEndian.Uint64(p[10:]))
		p = p[18:]
		if txn {
			if len(p) < 13 {
				return bad("entry")
			}
			e.txnFirst, e.coordEpoch = int64(binary.BigEndian.Uint64(p)), int32(binary.BigEndian.Uint32(p[8:]))
			if e.txnFirst < -1 {
				return bad("transaction")
			}
			p = p[12:]
		}
		k := int(p[0])
		p = p[1:]
		if k > producerBatchesKept || len(p) < k*24 || id < 0 {
			return bad("batches")
		}
		for j := 0; j < k; j++ {
			e.batches = append(e.batches, batchMeta{
				firstSeq:    int32(binary.BigEndian.Uint32(p)),
				lastSeq:     int32(binary.BigEndian.Uint32(p[4:])),
				firstOffset: int64(binary.BigEndian.Uint64(p[8:])),
				lastOffset:  int64(binary.BigEndian.Uint64(p[16:])),
			})
			p = p[24:]
		}
		ps.m[id] = e
		if e.txnFirst >= 0 {
			ps.open[id] = e.txnFirst
		}
	}
	if len(p) != 0 || offset < 0 {
		return bad("trailing bytes")
	}
	return offset, ps, nil
}
