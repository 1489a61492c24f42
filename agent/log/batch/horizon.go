package batch

// The delete horizon (KIP-534): the log cleaner stamps a batch it has
// found removable, a transaction marker whose transaction has no data
// left, with the time after which it may drop the batch, so that the
// wait survives restarts and rewrites. Attribute bit 6 says the batch
// carries one, and its baseTimestamp is then the horizon; the records'
// timestamp deltas are rebased so their timestamps do not change.

import "fmt"

// AttrDeleteHorizon marks a batch whose baseTimestamp is its delete
// horizon (Kafka's DELETE_HORIZON_FLAG_MASK).
const AttrDeleteHorizon = 0x40

// DeleteHorizon returns the batch's delete horizon in Unix milliseconds,
// if it has one.
func (h *Header) DeleteHorizon() (int64, bool) {
	if h.Attributes&AttrDeleteHorizon == 0 {
		return 0, false
	}
	return h.BaseTimestamp, true
}

// horizonMaxDecompressed bounds the batches WithDeleteHorizon opens:
// markers, a few dozen bytes.
const horizonMaxDecompressed = 1 << 20

// WithDeleteHorizon returns a copy of raw, a batch without a delete
// horizon, that carries horizonMs as one: every other header field, the
// records and their timestamps are kept. The caller owns the result.
func WithDeleteHorizon(raw []byte, horizonMs int64) ([]byte, error) {
	h, recs, err := Records(raw, horizonMaxDecompressed)
	if err != nil {
		return nil, err
	}
	if _, ok := h.DeleteHorizon(); ok {
		return nil, fmt.Errorf("%w: batch at %d already has a delete horizon", ErrInvalidRecord, h.BaseOffset)
	}
	for i := range recs {
		recs[i].TimestampDelta = h.BaseTimestamp + recs[i].TimestampDelta - horizonMs
	}
	h.BaseTimestamp = horizonMs
	h.Attributes |= AttrDeleteHorizon
	return BuildRetained(&h, recs)
}
