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
}

// producerState is the idempotence state of one partition, with Kafka's
// ProducerStateManager rules. Guarded by Log.mu.
type producerState struct {
	m map[int64]*producerEntry
}

func newProducerState() producerState { return producerState{m: map[int64]*producerEntry{}} }

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
// batch it repeats) or an error, or (nil, nil) to append.
func (ps *producerState) check(h *batch.Header) (*batchMeta, error) {
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

// update records a written batch (h.BaseOffset is its real offset).
func (ps *producerState) update(h *batch.Header) {
	if h.ProducerID < 0 {
		return
	}
	e, ok := ps.m[h.ProducerID]
	if !ok {
		e = &producerEntry{epoch: h.ProducerEpoch}
		ps.m[h.ProducerID] = e
	}
	if h.ProducerEpoch > e.epoch {
		e.epoch, e.batches = h.ProducerEpoch, e.batches[:0]
	}
	e.lastTs = max(e.lastTs, h.MaxTimestamp)
	if !idempotent(h) || h.ProducerEpoch < e.epoch {
		return
	}
	if len(e.batches) == producerBatchesKept {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerBatchesKept-1]
	}
	e.batches = append(e.batches, batchMeta{
		firstSeq: h.BaseSequence, lastSeq: h.LastSequence(),
		firstOffset: h.BaseOffset, lastOffset: h.LastOffset(),
	})
}

// expire drops producers whose last batch timestamp is ttl older than now.
func (ps *producerState) expire(nowMs int64, ttlMs int64) int {
	if ttlMs <= 0 {
		return 0
	}
	n := 0
	for id, e := range ps.m {
		if nowMs-e.lastTs >= ttlMs {
			delete(ps.m, id)
			n++
		}
	}
	return n
}

// encodeSnapshot writes the state as of offset (every batch below it).
//
//	offset i64 | count u32 | count x (producer id i64 | epoch i16 |
//	last timestamp i64 | n u8 | n x (first seq i32 | last seq i32 |
//	first offset i64 | last offset i64))
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
	if err != nil {
		return 0, ps, err
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
		e := &producerEntry{epoch: int16(binary.BigEndian.Uint16(p[8:])), lastTs: int64(binary.BigEndian.Uint64(p[10:]))}
		k := int(p[18])
		p = p[19:]
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
	}
	if len(p) != 0 || offset < 0 {
		return bad("trailing bytes")
	}
	return offset, ps, nil
}
