package partition

// KIP-890 part 1 on the partition leader: a transactional batch of a
// producer with no open transaction in the partition's log would open
// one, so before it is appended the transactional id's coordinator is
// asked whether the partition is in that producer's ongoing transaction
// (the verify function the Produce handler passes: a local call, or
// AddPartitionsToTxn v4 with VerifyOnly to another agent, agent/txn's
// Router). Without it a zombie's late batch opens a transaction no
// coordinator will end, and the partition's last stable offset stays
// behind it for good.
//
// KIP-890 part 2 (Produce v12+, transaction version 2): the client does
// not add partitions itself; the same path asks the coordinator to add
// the partition (AddPartitionsToTxn v5 without VerifyOnly), as Kafka
// 4.x's leaders do. A transaction open in the log at another epoch is
// the producer's previous one, whose marker (at the bumped epoch) has
// not landed yet: the batch goes through the coordinator too, which
// answers only once that transaction is complete.
//
// A verification guard (Kafka's VerificationStateEntry) closes the race
// with the transaction's end: it is registered for the producer before
// the coordinator is asked, a marker for that producer removes it
// (AppendTxnMarker), and the verified batch is appended only if its guard
// is still there. The check and the append, and a marker's removal and
// its append, hold the partition's txnMu, so a batch lands either before
// the marker (inside the transaction the marker ends) or not at all. The
// coordinator is asked without it: produces of other producers to the
// partition, and markers, do not wait for a round trip.
//
// Answers: the verify function's error as it returned it (the Produce
// handler maps the coordinator's answers to Produce's codes, in
// agent/kafka/txnverify.go, before they reach the partition); when the
// guard was removed during an add, NOT_ENOUGH_REPLICAS, so the producer
// retries and the coordinator decides again (a marker of the previous
// transaction may have removed it; a marker of this one bumped the
// epoch, and the retry is fenced); when it was removed during a
// verification, INVALID_TXN_STATE: the transaction the batch was
// verified in has ended.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
)

// txnGuard is one verification (its identity tells it from a later one)
// of a batch at epoch, adding its partition when add. The partition's
// txnGuards holds the verifications in flight, by producer id, under
// txnMu.
type txnGuard struct {
	epoch int16
	add   bool
}

// endedBy reports whether a marker at markerEpoch ends the transaction
// the guarded batch would join. Under transaction version 1 the marker
// carries the transaction's epoch; under version 2 (add) the epoch
// bumped by one, and the marker at the batch's own epoch is that of the
// producer's previous transaction, which may land while the batch's
// partition is being added: it must not fail the batch.
func (g *txnGuard) endedBy(markerEpoch int16) bool {
	if g.add {
		return markerEpoch > g.epoch
	}
	return markerEpoch >= g.epoch
}

// AppendTransactional is Append for a Produce. A batch that is not
// transactional is appended as Append does. A transactional batch needs
// the request's transactionalID (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
// as Kafka refuses it); it joins its producer's transaction open in the
// log at its epoch directly, and otherwise is appended only once verify
// (add false) or the coordinator's add of the partition (add true,
// transaction version 2) accepted it and no marker ended that
// transaction meanwhile (see the file comment). verify must be set when
// transactionalID is; it is called without the partition's locks, and
// its error is returned as is.
func (p *Partition) AppendTransactional(ctx context.Context, raw []byte, acks int16, transactionalID *string, add bool, verify dataplane.VerifyTxn) (log.AppendResult, dataplane.AppendWait, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil || !h.IsTransactional() {
		return p.Append(raw, acks)
	}
	if transactionalID == nil {
		// Kafka refuses transactional records without a transactional id.
		return log.AppendResult{}, nil, fmt.Errorf("%w: a transactional batch needs the request's transactional id", kerr.TransactionalIDAuthorizationFailed)
	}
	p.txnMu.Lock()
	if p.log.TxnOpen(h.ProducerID, h.ProducerEpoch) {
		defer p.txnMu.Unlock()
		return p.Append(raw, acks)
	}
	// A concurrent verification of the same producer shares the guard,
	// as in Kafka, so that neither fails the other.
	g := p.txnGuards[h.ProducerID]
	if g == nil || g.epoch != h.ProducerEpoch || g.add != add {
		g = &txnGuard{epoch: h.ProducerEpoch, add: add}
		if p.txnGuards == nil {
			p.txnGuards = map[int64]*txnGuard{}
		}
		p.txnGuards[h.ProducerID] = g
	}
	p.txnMu.Unlock()

	verr := verify(ctx, h.ProducerID, h.ProducerEpoch)

	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	current := p.txnGuards[h.ProducerID] == g
	if verr != nil {
		if current {
			delete(p.txnGuards, h.ProducerID)
		}
		return log.AppendResult{}, nil, verr
	}
	switch {
	case p.log.TxnOpen(h.ProducerID, h.ProducerEpoch):
		// A batch verified with the same guard opened it meanwhile.
	case current:
		delete(p.txnGuards, h.ProducerID)
	case add:
		// The transaction the partition was added to ended meanwhile
		// (its marker bumped the epoch): the retry is fenced, or adds
		// the partition to the next transaction of a newer epoch.
		return log.AppendResult{}, nil, fmt.Errorf("%w: a marker for producer %d landed on %s-%d while the partition was added; retry", kerr.NotEnoughReplicas, h.ProducerID, p.topic, p.index)
	default:
		return log.AppendResult{}, nil, fmt.Errorf("%w: producer %d's transaction ended while %s-%d was verified", kerr.InvalidTxnState, h.ProducerID, p.topic, p.index)
	}
	return p.Append(raw, acks)
}

// AppendTxnMarker appends the marker (commit or abort, from the
// coordinator at coordinatorEpoch) that ends producerID's transaction at
// epoch, after removing the producer's verification guard if the marker
// ends the guarded batch's transaction (txnGuard.endedBy), under the lock
// the verified produces take: a verification under way when the
// transaction ends fails instead of opening a transaction after the
// marker. It returns without waiting for the marker's acks; the wait,
// which must be called once, returns when acks=all holds.
func (p *Partition) AppendTxnMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32) (dataplane.AppendWait, error) {
	m := batch.Marker{Type: batch.ControlAbort, CoordinatorEpoch: coordinatorEpoch}
	if commit {
		m.Type = batch.ControlCommit
	}
	raw, err := batch.BuildMarker(producerID, epoch, m, time.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if g := p.txnGuards[producerID]; g != nil && g.endedBy(epoch) {
		delete(p.txnGuards, producerID)
	}
	_, wait, err := p.Append(raw, -1)
	return wait, err
}
