package txn

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// EndTxn commits or aborts id's transaction: the Prepare state is durable
// when it returns, and the markers are being written. It returns the
// producer id and epoch the producer holds from now on.
//
// tv2 says the request is one of transaction version 2 (EndTxn v5,
// KIP-890 part 2), as in Kafka's handleEndTransaction:
//
//   - The Prepare state carries the producer epoch bumped by one, and the
//     markers are written at it, so a zombie of the ended transaction is
//     fenced on every partition the transaction wrote. When the epoch is
//     exhausted, a new producer id is taken (NextProducerID) and handed
//     over, at epoch 0, on completion.
//   - A retry of an EndTxn whose answer was lost names the epoch before
//     the bump (or, after an exhausted epoch, the retired producer id):
//     it succeeds once that transaction is complete if it ended the same
//     way; anything else at an old epoch is PRODUCER_FENCED.
//   - An abort with no transaction open (nothing was added, or the last
//     one completed) is served: it bumps the epoch, with no markers.
//
// Without tv2 (EndTxn v0-4) the epoch is kept, and a retried EndTxn of a
// transaction already ending the same way succeeds.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit, tv2 bool) (int64, int16, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.awaitLocked(ctx, id)
	if err != nil {
		return -1, -1, err
	}
	if t == nil {
		return -1, -1, fmt.Errorf("%w: %q, producer %d", ErrInvalidProducerIDMapping, id, producerID)
	}
	prepare, complete := kmsg.TransactionStatePrepareAbort, kmsg.TransactionStateCompleteAbort
	if commit {
		prepare, complete = kmsg.TransactionStatePrepareCommit, kmsg.TransactionStateCompleteCommit
	}
	if t.TV2 {
		return c.endTxnV2Locked(ctx, t, producerID, epoch, commit, tv2, prepare, complete)
	}
	if _, err := c.checkProducerLocked(ctx, id, producerID, epoch); err != nil {
		return -1, -1, err
	}
	switch t.State {
	case kmsg.TransactionStateOngoing:
	case complete:
		if tv2 && !commit {
			// A version-2 abort with nothing open (the last transaction
			// was of version 1, before an upgrade): a retry would name the
			// epoch before a bump, so this one is served and bumps it.
			return c.prepareLocked(ctx, t, prepare, tv2)
		}
		return t.ProducerID, t.ProducerEpoch, nil // a retry after the answer was lost
	case prepare:
		return -1, -1, ErrConcurrentTransactions
	case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		if tv2 && !commit {
			return c.prepareLocked(ctx, t, prepare, tv2)
		}
		return -1, -1, fmt.Errorf("%w: %q is %s, cannot end it with commit=%v", ErrInvalidTxnState, id, t.State, commit)
	default:
		return -1, -1, fmt.Errorf("%w: %q is %s, cannot end it with commit=%v", ErrInvalidTxnState, id, t.State, commit)
	}
	return c.prepareLocked(ctx, t, prepare, tv2)
}

// endTxnV2Locked is EndTxn of a transaction whose last end or add was of
// transaction version 2: the epoch a request names tells a retry (the
// epoch before the bump) from the next transaction's end (the current
// epoch), as in Kafka.
func (c *Coordinator) endTxnV2Locked(ctx context.Context, t *txnState, producerID int64, epoch int16, commit, tv2 bool, prepare, complete State) (int64, int16, error) {
	bumped := t.ProducerID == producerID && int32(epoch)+1 == int32(t.ProducerEpoch)
	overflowed := t.PrevProducerID >= 0 && t.PrevProducerID == producerID && epoch == math.MaxInt16-1 && t.ProducerEpoch == 0
	retry := bumped || overflowed
	current := t.ProducerID == producerID && epoch == t.ProducerEpoch
	if !retry && !current {
		if t.ProducerID != producerID {
			return -1, -1, fmt.Errorf("%w: %q, producer %d", ErrInvalidProducerIDMapping, t.TransactionalID, producerID)
		}
		return -1, -1, fmt.Errorf("%w: %q epoch %d, current %d", ErrProducerFenced, t.TransactionalID, epoch, t.ProducerEpoch)
	}
	invalid := fmt.Errorf("%w: %q is %s, cannot end it with commit=%v at epoch %d", ErrInvalidTxnState, t.TransactionalID, t.State, commit, epoch)
	switch t.State {
	case kmsg.TransactionStateOngoing, kmsg.TransactionStateEmpty:
		if !current {
			return -1, -1, fmt.Errorf("%w: %q epoch %d, current %d", ErrProducerFenced, t.TransactionalID, epoch, t.ProducerEpoch)
		}
		if t.State == kmsg.TransactionStateEmpty && commit {
			return -1, -1, invalid
		}
		return c.prepareLocked(ctx, t, prepare, tv2)
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		switch {
		case !retry:
			return -1, -1, fmt.Errorf("%w: %q epoch %d, current %d", ErrProducerFenced, t.TransactionalID, epoch, t.ProducerEpoch)
		case t.State == prepare:
			return -1, -1, ErrConcurrentTransactions
		}
		return -1, -1, invalid
	}
	// CompleteCommit or CompleteAbort.
	switch {
	case retry && t.State == complete:
		return t.ProducerID, t.ProducerEpoch, nil // the answer was lost
	case retry || commit:
		return -1, -1, invalid
	}
	return c.prepareLocked(ctx, t, prepare, tv2) // an abort with nothing open
}

// prepareLocked makes t's Prepare state durable and starts its
// completion. Under tv2 the epoch is bumped (a new producer id is taken
// when it is exhausted); the answer is what the producer holds after it.
func (c *Coordinator) prepareLocked(ctx context.Context, t *txnState, prepare State, tv2 bool) (int64, int16, error) {
	next := t.Metadata
	next.State, next.TV2, next.NextProducerID = prepare, tv2, -1
	if next.State == kmsg.TransactionStatePrepareAbort && len(next.Partitions) == 0 {
		// An abort with nothing open starts and ends here, as in Kafka.
		next.Partitions, next.Start = nil, c.now()
	}
	if tv2 {
		if next.ProducerEpoch >= math.MaxInt16-1 {
			pid, err := c.cfg.ProducerIDs.NewProducerID(ctx)
			if err != nil {
				return -1, -1, err
			}
			next.NextProducerID = pid
		}
		if next.ProducerEpoch < math.MaxInt16 {
			next.ProducerEpoch++
		}
	}
	before := t.ProducerEpoch
	if err := c.writeLocked(ctx, t, next); err != nil {
		return -1, -1, err
	}
	if tv2 && next.NextProducerID < 0 {
		// Kafka's lastProducerEpoch: an InitProducerID naming the epoch
		// before the bump retries this end's lost answer (coordinator.go).
		t.lastEpoch = before
	}
	c.completeLocked(t)
	if next.NextProducerID >= 0 {
		return next.NextProducerID, 0, nil
	}
	return next.ProducerID, next.ProducerEpoch, nil
}
