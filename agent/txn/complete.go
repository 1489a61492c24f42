package txn

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// completeLocked starts the second phase of t's prepared transaction:
// markers to every partition, then the Complete record. It runs on a
// goroutine of the coordinator, retrying until it succeeds or the
// coordinator closes (a new coordinator resumes it from the log).
func (c *Coordinator) completeLocked(t *txnState) {
	if t.completing || c.closed {
		return
	}
	t.completing = true
	t.completed = make(chan struct{})
	prepared := t.Metadata
	c.workers.Add(1)
	began := time.Now()
	go func() {
		defer c.workers.Done()
		c.complete(t, prepared, began)
	}()
}

// complete writes the markers of the transaction prepared since began,
// then its Complete state.
func (c *Coordinator) complete(t *txnState, prepared Metadata, began time.Time) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if c.cfg.BeforeMarkers != nil && !c.cfg.BeforeMarkers(prepared.TransactionalID) {
		return // as if the agent had stopped here: t stays completing
	}
	commit := prepared.State == kmsg.TransactionStatePrepareCommit
	for {
		err := c.cfg.Markers.WriteMarkers(ctx, prepared.ProducerID, prepared.ProducerEpoch, commit, c.cfg.CoordinatorEpoch, prepared.Partitions)
		if err == nil {
			break
		}
		c.cfg.Metrics.markersFailed()
		c.logger.Warn("transaction markers failed; retrying", "transactional_id", prepared.TransactionalID, "err", err)
		t := time.NewTimer(c.cfg.MarkerRetryBackoff)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	next := prepared
	next.State, next.Partitions, next.Start = kmsg.TransactionStateCompleteAbort, nil, time.Time{}
	if commit {
		next.State = kmsg.TransactionStateCompleteCommit
	}
	if prepared.NextProducerID >= 0 {
		// The epoch was exhausted (a TV2 end at the last epoch): the
		// producer continues under the new id, as EndTxn answered.
		next.PrevProducerID, next.ProducerID, next.ProducerEpoch, next.NextProducerID = prepared.ProducerID, prepared.NextProducerID, 0, -1
	}
	for {
		err := c.writeLocked(ctx, t, next)
		if err == nil {
			break
		}
		if errors.Is(err, ErrClosed) {
			return
		}
		// The markers are written, so the outcome is decided; only the
		// record saying so is missing. Retrying keeps the transaction
		// pending (clients retry CONCURRENT_TRANSACTIONS) until it lands
		// or the partition moves and a new coordinator redoes the markers.
		c.logger.Warn("write completed transaction state; retrying", "transactional_id", prepared.TransactionalID, "err", err)
		c.mu.Unlock()
		select {
		case <-c.stop:
			c.mu.Lock()
			return
		case <-time.After(c.cfg.MarkerRetryBackoff):
		}
		c.mu.Lock()
		if c.closed {
			return
		}
	}
	t.completing = false
	close(t.completed)
	t.completed = nil
	c.cfg.Metrics.completedTxn(commit, time.Since(began))
}

// concurrentWait bounds how long a request waits for the completion of
// the transaction before it (waitCompletedLocked) before it answers
// CONCURRENT_TRANSACTIONS: markers normally land in milliseconds, and
// one stuck behind a moving partition should not hold the request.
const concurrentWait = 500 * time.Millisecond

// waitCompletedLocked waits, with c.mu released, until t's completion
// under way ends, for at most concurrentWait or until ctx ends. It
// reports whether it ended; the caller checks t's state again either way
// (c.mu is held again when it returns).
func (c *Coordinator) waitCompletedLocked(ctx context.Context, t *txnState) bool {
	done := t.completed
	if done == nil {
		return !t.completing
	}
	timer := time.NewTimer(concurrentWait)
	defer timer.Stop()
	c.mu.Unlock()
	defer c.mu.Lock()
	select {
	case <-done:
		return true
	case <-timer.C:
	case <-ctx.Done():
	case <-c.stop:
	}
	return false
}

// AbortTimedOut aborts, at a new epoch, every open transaction older than
// its timeout (Kafka's abortTimedOutTransactions); the producer that left
// it open is fenced. It returns how many it began to abort.
func (c *Coordinator) AbortTimedOut(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, ErrClosed
	}
	now, n := c.now(), 0
	var open []*txnState
	for _, t := range c.txns {
		open = append(open, t)
	}
	// Each abort's write releases the mutex: every one is checked again
	// when its turn comes.
	for _, t := range open {
		if c.closed {
			return n, ErrClosed
		}
		// One being written is looked at again at the next check.
		if c.txns[t.TransactionalID] != t || t.pending != nil || t.State != kmsg.TransactionStateOngoing || t.completing || now.Sub(t.Start) <= t.Timeout {
			continue
		}
		c.logger.Info("aborting a transaction open longer than its timeout",
			"transactional_id", t.TransactionalID, "producer_id", t.ProducerID, "timeout", t.Timeout)
		if err := c.beginAbortLocked(ctx, t, true); err != nil {
			return n, err
		}
		c.cfg.Metrics.timedOutTxn()
		n++
	}
	return n, nil
}

// ExpireIDs forgets the transactional ids with no transaction open whose
// last change is older than the IDExpiration, writing a tombstone for
// each, as Kafka's coordinator does after transactional.id.expiration.ms.
// It returns how many it forgot.
func (c *Coordinator) ExpireIDs(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, ErrClosed
	}
	now, n := c.now(), 0
	for id, t := range c.txns {
		switch t.State {
		case kmsg.TransactionStateEmpty, kmsg.TransactionStateCompleteCommit, kmsg.TransactionStateCompleteAbort:
		default:
			continue
		}
		if t.pending != nil || t.completing || c.cfg.IDExpiration <= 0 || now.Sub(t.LastUpdate) <= c.cfg.IDExpiration {
			continue
		}
		raw, err := buildBatch(tombstone(id), now)
		if err != nil {
			return n, err
		}
		if err := c.log.Append(ctx, raw); err != nil {
			return n, err
		}
		delete(c.txns, id)
		n++
	}
	return n, nil
}

// Describe returns the state of id's transaction.
func (c *Coordinator) Describe(id string) (Metadata, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.txns[id]
	if !ok || !t.written() {
		return Metadata{}, false
	}
	m := t.Metadata
	m.Partitions = append([]TopicPartition(nil), m.Partitions...)
	return m, true
}

// List returns every transactional id this coordinator knows, with its
// producer id and state.
func (c *Coordinator) List() []Metadata {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Metadata, 0, len(c.txns))
	for _, t := range c.txns {
		if !t.written() {
			continue
		}
		m := t.Metadata
		m.Partitions = nil
		out = append(out, m)
	}
	return out
}
