package producers

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// BatchesKept is how many recent batches per producer id are kept to
// answer retries with their original offsets (Kafka's 5, which is also
// the most in-flight requests an idempotent client may have).
const BatchesKept = 5

// The errors of Check. Their texts reach clients in produce responses'
// error messages.
var (
	// ErrOutOfOrderSequence is an idempotent batch whose sequence does not
	// follow the producer's last one.
	ErrOutOfOrderSequence = errors.New("producers: out of order sequence")
	// ErrInvalidProducerEpoch is a batch or marker from a fenced (older)
	// producer epoch.
	ErrInvalidProducerEpoch = errors.New("producers: invalid producer epoch")
	// ErrInvalidTxnState is a non-transactional batch from a producer
	// whose transaction is open (Kafka's INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("producers: invalid transaction state")
	// ErrCoordinatorFenced is a marker from an older coordinator epoch than
	// the producer's last marker (TRANSACTION_COORDINATOR_FENCED).
	ErrCoordinatorFenced = errors.New("producers: transaction coordinator fenced")
)

// Batch is one idempotent batch kept for duplicate detection.
type Batch struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
}

// Producer is what a State keeps of one producer id.
type Producer struct {
	ID    int64
	Epoch int16
	// LastTimestamp is the largest MaxTimestamp of its batches (expiry).
	LastTimestamp int64
	// TxnFirst is the first offset of its open transaction, -1 if none.
	TxnFirst int64
	// CoordinatorEpoch is the coordinator epoch of its last marker, -1 if
	// none.
	CoordinatorEpoch int32
	// Batches are its last idempotent batches of Epoch, oldest first, at
	// most BatchesKept.
	Batches []Batch
}

// Completed is what a commit or abort marker did: it closed ProducerID's
// transaction, which began at FirstOffset (the marker's own offset when
// nothing was open here).
type Completed struct {
	ProducerID   int64
	FirstOffset  int64
	MarkerOffset int64
	Aborted      bool
	// FirstUnstableAfter is the first unstable offset once it closed, -1
	// if no transaction stays open.
	FirstUnstableAfter int64
}

// State is the producer state of one partition. The zero value is not
// usable; New makes one.
type State struct {
	m map[int64]*Producer
	// open maps the producers with an open transaction to its first
	// offset: the few entries the last stable offset depends on. A
	// producer is in it exactly when its TxnFirst is >= 0.
	open map[int64]int64
}

// New returns an empty State.
func New() *State {
	return &State{m: map[int64]*Producer{}, open: map[int64]int64{}}
}

func newProducer(id int64, epoch int16) *Producer {
	return &Producer{ID: id, Epoch: epoch, TxnFirst: -1, CoordinatorEpoch: -1}
}

// FirstUnstable is the first offset of the oldest open transaction, -1 if
// none is open.
func (s *State) FirstUnstable() int64 {
	first := int64(-1)
	for _, off := range s.open {
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

func nextSeq(seq int32) int32 {
	if seq == math.MaxInt32 {
		return 0
	}
	return seq + 1
}

// Check decides a batch before it is written: a duplicate (a copy of the
// kept batch it repeats) or an error, or (nil, nil) to write it. m is the
// marker of a control batch, ignored for other batches. Check changes
// nothing.
func (s *State) Check(h *batch.Header, m batch.Marker) (*Batch, error) {
	if h.IsControl() {
		return nil, s.checkMarker(h, m)
	}
	if !idempotent(h) {
		return nil, nil
	}
	e, ok := s.m[h.ProducerID]
	if !ok {
		// Unknown producer: its state may have expired or been removed by
		// retention, so any sequence is accepted, as Kafka does.
		return nil, nil
	}
	first, last := h.BaseSequence, h.LastSequence()
	switch {
	case h.ProducerEpoch < e.Epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	case h.ProducerEpoch > e.Epoch:
		if first != 0 {
			return nil, fmt.Errorf("%w: producer %d new epoch %d starts at sequence %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first)
		}
		return nil, nil
	case e.TxnFirst >= 0 && !h.IsTransactional():
		return nil, fmt.Errorf("%w: producer %d has an open transaction but sent a non-transactional batch", ErrInvalidTxnState, h.ProducerID)
	}
	for i := range e.Batches {
		if b := &e.Batches[i]; b.FirstSeq == first && b.LastSeq == last {
			dup := *b
			return &dup, nil
		}
	}
	if len(e.Batches) == 0 {
		return nil, nil
	}
	if want := nextSeq(e.Batches[len(e.Batches)-1].LastSeq); first != want {
		return nil, fmt.Errorf("%w: producer %d epoch %d sequence %d, want %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, first, want)
	}
	return nil, nil
}

// checkMarker refuses a marker from a fenced producer epoch or an older
// coordinator than the producer's last marker, as Kafka does.
func (s *State) checkMarker(h *batch.Header, m batch.Marker) error {
	e, ok := s.m[h.ProducerID]
	switch {
	case !ok:
		return nil
	case h.ProducerEpoch < e.Epoch:
		return fmt.Errorf("%w: marker for producer %d epoch %d, current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	case m.CoordinatorEpoch < e.CoordinatorEpoch:
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, last %d", ErrCoordinatorFenced, h.ProducerID, m.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

// Update records a written batch (h.BaseOffset is its real offset; m is
// the marker of a control batch) and returns the transaction a marker
// completed, if any. Update checks nothing: a follower or a replay
// records what the leader wrote.
func (s *State) Update(h *batch.Header, m batch.Marker) *Completed {
	if h.ProducerID < 0 {
		return nil
	}
	e, ok := s.m[h.ProducerID]
	if !ok {
		e = newProducer(h.ProducerID, h.ProducerEpoch)
		s.m[h.ProducerID] = e
	}
	if h.ProducerEpoch > e.Epoch {
		e.Epoch, e.Batches = h.ProducerEpoch, e.Batches[:0]
	}
	e.LastTimestamp = max(e.LastTimestamp, h.MaxTimestamp)
	switch {
	case h.IsControl():
		if m.Type != batch.ControlAbort && m.Type != batch.ControlCommit {
			return nil
		}
		// A marker for a producer with nothing open here (the
		// partition was added but never written, or its state
		// expired) completes an empty transaction at the marker, as
		// in Kafka.
		first := e.TxnFirst
		if first < 0 {
			first = h.BaseOffset
		}
		e.TxnFirst, e.CoordinatorEpoch = -1, m.CoordinatorEpoch
		delete(s.open, h.ProducerID)
		return &Completed{
			ProducerID: h.ProducerID, FirstOffset: first, MarkerOffset: h.BaseOffset,
			Aborted: m.Type == batch.ControlAbort, FirstUnstableAfter: s.FirstUnstable(),
		}
	case h.IsTransactional() && e.TxnFirst < 0:
		e.TxnFirst = h.BaseOffset
		s.open[h.ProducerID] = h.BaseOffset
	}
	if !idempotent(h) || h.ProducerEpoch < e.Epoch {
		return nil
	}
	if len(e.Batches) == BatchesKept {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:BatchesKept-1]
	}
	e.Batches = append(e.Batches, Batch{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(),
	})
	return nil
}

// Expire forgets the producers whose last batch timestamp is ttlMs or
// more before nowMs, and returns how many. ttlMs <= 0 keeps every one.
func (s *State) Expire(nowMs, ttlMs int64) int {
	if ttlMs <= 0 {
		return 0
	}
	n := 0
	for id, e := range s.m {
		// An open transaction keeps its producer: the last stable offset
		// waits for its marker (or the coordinator's timeout abort).
		if e.TxnFirst < 0 && nowMs-e.LastTimestamp >= ttlMs {
			delete(s.m, id)
			n++
		}
	}
	return n
}

// TxnOpen reports whether producerID has an open transaction here at
// epoch: its next transactional batch at that epoch joins it and needs
// no verification with the coordinator (KIP-890). One open at another
// epoch does not count, as in Kafka 4.x's hasOngoingTransaction: under
// transaction version 2 a producer's next transaction has the next
// epoch, and its first batch must not join the previous transaction
// whose marker has not landed here yet.
func (s *State) TxnOpen(producerID int64, epoch int16) bool {
	if _, ok := s.open[producerID]; !ok {
		return false
	}
	e := s.m[producerID]
	return e != nil && e.Epoch == epoch
}

// Len is the number of producers kept.
func (s *State) Len() int { return len(s.m) }

// Producer returns what is kept of producerID, with its own copy of the
// batches.
func (s *State) Producer(producerID int64) (Producer, bool) {
	e, ok := s.m[producerID]
	if !ok {
		return Producer{}, false
	}
	p := *e
	p.Batches = slices.Clone(e.Batches)
	return p, true
}

// Each calls fn for every producer, in no particular order, without
// copying: p.Batches is the state's own memory, to read during the call
// only. fn must not change the State.
func (s *State) Each(fn func(p Producer)) {
	for _, e := range s.m {
		p := *e
		p.Batches = e.Batches[:len(e.Batches):len(e.Batches)]
		fn(p)
	}
}
