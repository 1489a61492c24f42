package kafka

// KIP-890 part 1 on the partition leader: a transactional batch of a
// producer with no open transaction in the partition's log would open
// one, so before it is appended the transactional id's coordinator is
// asked whether the partition is in that producer's ongoing transaction
// (Transactions.VerifyTxn: a local call, or AddPartitionsToTxn v4 with
// VerifyOnly to another agent). Without it a zombie's late batch opens a
// transaction no coordinator will end, and the partition's last stable
// offset stays behind it for good.
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
// with the transaction's end: it is registered for (partition, producer)
// before the coordinator is asked, a marker for that producer removes it
// (AppendTxnMarker), and the verified batch is appended only if its guard
// is still there. The check and the append, and a marker's removal and
// its append, hold the partition's stripe lock, so a batch lands either
// before the marker (inside the transaction the marker ends) or not at
// all.
//
// Answers, as Kafka's leaders give them to producers: INVALID_TXN_STATE
// when the partition is not in the transaction (verification only); when
// the guard was removed during an add, NOT_ENOUGH_REPLICAS, so the
// producer retries and the coordinator decides again (a marker of the
// previous transaction may have removed it; a marker of this one bumped
// the epoch, and the retry is fenced); the coordinator's
// retriable errors (CONCURRENT_TRANSACTIONS, NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, a network
// failure) become NOT_ENOUGH_REPLICAS, which every producer retries
// without a metadata refresh; a fenced epoch is INVALID_PRODUCER_EPOCH,
// Produce's fencing code.

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/txn"
)

// txnGuardStripes is how many locks the guards are spread over: produces
// to different partitions rarely wait for each other.
const txnGuardStripes = 64

// txnGuards holds the verifications in flight. The zero value is ready.
type txnGuards struct {
	seed    maphash.Seed
	once    sync.Once
	stripes [txnGuardStripes]txnGuardStripe
}

type txnGuardStripe struct {
	mu sync.Mutex
	m  map[txnGuardKey]*txnGuard // verifications in flight
}

type txnGuardKey struct {
	topic      string
	partition  int32
	producerID int64
}

// txnGuard is one verification (its identity tells it from a later one)
// of a batch at epoch, adding its partition when add.
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

func (g *txnGuards) stripe(k txnGuardKey) *txnGuardStripe {
	g.once.Do(func() { g.seed = maphash.MakeSeed() })
	var h maphash.Hash
	h.SetSeed(g.seed)
	h.WriteString(k.topic)
	return &g.stripes[(h.Sum64()+uint64(k.partition))%txnGuardStripes]
}

// AppendTxnMarker runs appendMarker, which appends a transaction marker
// of producerID at epoch to the partition without waiting for its acks,
// after removing the producer's verification guard there if the marker
// ends the guarded batch's transaction (txnGuard.endedBy), under the lock
// the verified produces take: a verification under way when the
// transaction ends fails instead of opening a transaction after the
// marker.
func (s *Server) AppendTxnMarker(topic string, partition int32, producerID int64, epoch int16, appendMarker func() error) error {
	k := txnGuardKey{topic, partition, producerID}
	st := s.txnGuards.stripe(k)
	st.mu.Lock()
	defer st.mu.Unlock()
	if g := st.m[k]; g != nil && g.endedBy(epoch) {
		delete(st.m, k)
	}
	return appendMarker()
}

// appendVerified appends raw to p, first verifying a transactional batch
// with the coordinator when its producer has no open transaction there
// at its epoch; with add (transaction version 2) the coordinator adds
// the partition instead of verifying it.
func (s *Server) appendVerified(ctx context.Context, transactionalID *string, add bool, topic string, partition int32, p PartitionWriter, raw []byte, acks int16) (log.AppendResult, AppendWait, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil || !h.IsTransactional() {
		return p.Append(raw, acks)
	}
	if transactionalID == nil {
		// Kafka refuses transactional records without a transactional id.
		return log.AppendResult{}, nil, fmt.Errorf("%w: a transactional batch needs the request's transactional id", kerr.TransactionalIDAuthorizationFailed)
	}
	k := txnGuardKey{topic, partition, h.ProducerID}
	st := s.txnGuards.stripe(k)
	st.mu.Lock()
	if p.TxnOpen(h.ProducerID, h.ProducerEpoch) {
		defer st.mu.Unlock()
		return p.Append(raw, acks)
	}
	// A concurrent verification of the same producer shares the guard,
	// as in Kafka, so that neither fails the other.
	g := st.m[k]
	if g == nil || g.epoch != h.ProducerEpoch || g.add != add {
		g = &txnGuard{epoch: h.ProducerEpoch, add: add}
		if st.m == nil {
			st.m = map[txnGuardKey]*txnGuard{}
		}
		st.m[k] = g
	}
	st.mu.Unlock()

	verr := s.txns.VerifyTxn(ctx, *transactionalID, h.ProducerID, h.ProducerEpoch, topic, partition, add)

	st.mu.Lock()
	defer st.mu.Unlock()
	current := st.m[k] == g
	if verr != nil {
		if current {
			delete(st.m, k)
		}
		return log.AppendResult{}, nil, verifyError(verr)
	}
	switch {
	case p.TxnOpen(h.ProducerID, h.ProducerEpoch):
		// A batch verified with the same guard opened it meanwhile.
	case current:
		delete(st.m, k)
	case add:
		// The transaction the partition was added to ended meanwhile
		// (its marker bumped the epoch): the retry is fenced, or adds
		// the partition to the next transaction of a newer epoch.
		return log.AppendResult{}, nil, fmt.Errorf("%w: a marker for producer %d landed on %s-%d while the partition was added; retry", kerr.NotEnoughReplicas, h.ProducerID, topic, partition)
	default:
		return log.AppendResult{}, nil, fmt.Errorf("%w: producer %d's transaction ended while %s-%d was verified", kerr.InvalidTxnState, h.ProducerID, topic, partition)
	}
	return p.Append(raw, acks)
}

// verifyError is the Produce answer to a failed verification (see the
// file comment).
func verifyError(err error) error {
	switch errorCode(err) {
	case kerr.InvalidTxnState.Code:
		return fmt.Errorf("%w: the partition is not in the producer's transaction: %w", kerr.InvalidTxnState, err)
	case kerr.ConcurrentTransactions.Code, kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code,
		kerr.CoordinatorLoadInProgress.Code, kerr.NetworkException.Code, kerr.RequestTimedOut.Code:
		return fmt.Errorf("%w: could not verify the partition is in the transaction: %w", kerr.NotEnoughReplicas, err)
	case kerr.ProducerFenced.Code:
		return fmt.Errorf("%w: %w", kerr.InvalidProducerEpoch, err)
	}
	if errors.Is(err, txn.ErrClosed) {
		return fmt.Errorf("%w: %w", kerr.NotEnoughReplicas, err)
	}
	return err
}
