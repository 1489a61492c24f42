package txn

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/coordlog"
	"github.com/strata-streaming/strata/agent/log/batch"
)

// Log is the partition of __transaction_state a Coordinator keeps its
// records in (agent/coordlog); the agent implements it over a partition
// log.
type Log = coordlog.Log

// Markers writes transaction markers to the partitions a transaction
// wrote to, wherever their leaders are.
type Markers interface {
	// WriteMarkers writes a marker ending producerID's transaction, at
	// producer epoch epoch, to each partition, and returns once every one
	// is durable on its leader (acks=all). It follows moved leaders
	// itself; an error means some partition is not marked yet.
	WriteMarkers(ctx context.Context, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, parts []TopicPartition) error
}

// ProducerIDs hands out new producer ids.
type ProducerIDs interface {
	NewProducerID(ctx context.Context) (int64, error)
}

// Config holds a coordinator's settings and collaborators.
type Config struct {
	// MaxTimeout (transaction.max.timeout.ms) bounds the timeout a
	// producer may ask for.
	MaxTimeout time.Duration
	// CoordinatorEpoch is the leader epoch of the partition: markers carry
	// it, so that a partition refuses those of a deposed coordinator.
	CoordinatorEpoch int32
	Markers          Markers
	ProducerIDs      ProducerIDs
	// IDExpiration (transactional.id.expiration.ms) is how long a
	// transactional id with no transaction open is kept after its last
	// change; then it is forgotten (a tombstone in the partition).
	IDExpiration time.Duration
	// MarkerRetryBackoff is the wait between rounds of markers that failed.
	MarkerRetryBackoff time.Duration
	// Now is the clock of timestamps and timeouts; nil is time.Now.
	Now func() time.Time
	// BeforeMarkers, when set, runs after a Prepare state is durable and
	// before its markers are written; returning false abandons the
	// completion, as a crash at that point would. Tests set it to stop a
	// coordinator between the two phases; the agent never does.
	BeforeMarkers func(transactionalID string) bool
	// Metrics, when set, count what the coordinator does; the agent
	// shares one among its coordinators.
	Metrics *Metrics
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{MaxTimeout: 15 * time.Minute, IDExpiration: 7 * 24 * time.Hour, MarkerRetryBackoff: 100 * time.Millisecond}
}

// Coordinator serves the transactional ids that hash to one partition of
// __transaction_state. See the package comment for the contract.
type Coordinator struct {
	partition int32
	log       Log
	cfg       Config
	logger    *slog.Logger
	now       func() time.Time

	mu      sync.Mutex
	txns    map[string]*txnState
	closed  bool
	stop    chan struct{}
	workers sync.WaitGroup
}

// txnState is one transactional id: its durable metadata and whether a
// completion (markers, then the Complete record) is under way.
type txnState struct {
	Metadata
	// pending is closed when the write of the id's next state, under way
	// with c.mu released, ends (nil when none is): Kafka's pendingState.
	// Requests for the id wait for it (awaitLocked); other ids go on.
	pending    chan struct{}
	completing bool
	// completed is closed when the completion under way ends (nil when
	// none is): requests that must wait for it (waitCompletedLocked).
	completed chan struct{}
	// fencedEpoch is the epoch a timeout abort fenced (-1: none), kept in
	// memory only, as Kafka's lastProducerEpoch: the producer that held it
	// may still recover with KIP-360 and keep its producer id.
	fencedEpoch int16
	// lastEpoch is Kafka's lastProducerEpoch, kept in memory only as in
	// Kafka (-1: none): the epoch the producer held before the last bump
	// it asked for (a version-2 EndTxn, or InitProducerID naming its
	// epoch). An InitProducerID naming it is a retry of a call whose
	// answer was lost, and gets the current epoch without a bump.
	lastEpoch int16
}

// Load replays the partition and returns a ready coordinator, which
// resumes the completion of every transaction left prepared.
func Load(ctx context.Context, partition int32, l Log, cfg Config, logger *slog.Logger) (*Coordinator, error) {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Coordinator{partition: partition, log: l, cfg: cfg, logger: logger, now: cfg.Now,
		txns: map[string]*txnState{}, stop: make(chan struct{})}
	if c.now == nil {
		c.now = time.Now
	}
	if c.cfg.MarkerRetryBackoff <= 0 {
		c.cfg.MarkerRetryBackoff = DefaultConfig().MarkerRetryBackoff
	}
	began := time.Now()
	err := coordlog.Replay(l, func(h batch.Header, raw []byte) error {
		if h.IsControl() {
			return nil
		}
		recs, err := coordlog.Records(raw)
		if err != nil {
			return err
		}
		for _, r := range recs {
			id, m, err := decodeRecord(r)
			if err != nil {
				return fmt.Errorf("offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
			}
			if m == nil {
				delete(c.txns, id)
				continue
			}
			c.txns[id] = &txnState{Metadata: *m, fencedEpoch: -1, lastEpoch: -1}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("txn: replay partition %d: %w", partition, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.Metrics.loaded(time.Since(began), c.openLocked())
	for _, t := range c.txns {
		if t.State == kmsg.TransactionStatePrepareCommit || t.State == kmsg.TransactionStatePrepareAbort {
			logger.Info("completing a transaction the previous coordinator prepared",
				"transactional_id", t.TransactionalID, "state", t.State.String())
			c.completeLocked(t)
		}
	}
	return c, nil
}

// Partition is the partition of __transaction_state this coordinator serves.
func (c *Coordinator) Partition() int32 { return c.partition }

// Close stops the coordinator and waits for its marker writers; later
// calls fail with ErrClosed. It may be called more than once.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.stop)
		c.cfg.Metrics.unloaded(c.openLocked())
	}
	c.mu.Unlock()
	c.workers.Wait()
}

// openLocked counts the transactions open or being ended
// (strata_txn_ongoing).
func (c *Coordinator) openLocked() int {
	n := 0
	for _, t := range c.txns {
		if isOpen(t.State) {
			n++
		}
	}
	return n
}

// writeLocked makes next durable, then installs it as t's metadata. The
// mutex is released during the append (an acks=all round trip), so that
// other transactional ids of the partition are not held up; t is pending
// meanwhile, and every request for it waits (awaitLocked), so the
// changes of one id land in the order they were decided. The callers
// decide next with the mutex held since their awaitLocked, so no other
// write of t is under way.
func (c *Coordinator) writeLocked(ctx context.Context, t *txnState, next Metadata) error {
	if t.pending != nil {
		// A path that skipped awaitLocked: refuse rather than reorder.
		return fmt.Errorf("%w: %q has a write under way", ErrConcurrentTransactions, t.TransactionalID)
	}
	next.LastUpdate = c.now()
	raw, err := buildBatch(record(&next), next.LastUpdate)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	t.pending = done
	c.mu.Unlock()
	err = c.log.Append(ctx, raw)
	c.mu.Lock()
	t.pending = nil
	close(done)
	switch {
	case err != nil:
		return err
	case c.closed:
		// The record is durable, and the partition's next coordinator
		// replays it; this one serves no more.
		return ErrClosed
	}
	c.cfg.Metrics.changed(t.State, next.State)
	t.Metadata = next
	return nil
}

// awaitLocked returns id's transaction (nil if there is none) once no
// write of it is under way, waiting with the mutex released.
func (c *Coordinator) awaitLocked(ctx context.Context, id string) (*txnState, error) {
	for {
		if c.closed {
			return nil, ErrClosed
		}
		t := c.txns[id]
		if t == nil || t.pending == nil {
			return t, nil
		}
		done := t.pending
		c.mu.Unlock()
		var err error
		select {
		case <-done:
		case <-c.stop:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		if err != nil {
			return nil, err
		}
	}
}

// written reports whether t has a durable state: a new id's is being
// written for the first time while it is pending with none.
func (t *txnState) written() bool { return !t.LastUpdate.IsZero() }

// InitProducerID gives transactional id id a producer id and a new epoch,
// fencing every older instance (Kafka's handleInitProducerId). An open
// transaction of the old instance is aborted first; meanwhile the caller
// gets ErrConcurrentTransactions and retries. expectedID and expectedEpoch
// (-1: none) are KIP-360's: a producer that recovers from an error keeps
// its id only if it still holds the current epoch.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeout time.Duration, expectedID int64, expectedEpoch int16) (int64, int16, error) {
	if id == "" {
		return -1, -1, ErrInvalidTransactionalID
	}
	if timeout <= 0 || timeout > c.cfg.MaxTimeout {
		return -1, -1, fmt.Errorf("%w: %v, the maximum is %v", ErrInvalidTimeout, timeout, c.cfg.MaxTimeout)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.awaitLocked(ctx, id)
	if err != nil {
		return -1, -1, err
	}
	if t == nil {
		pid, err := c.cfg.ProducerIDs.NewProducerID(ctx)
		if err != nil {
			return -1, -1, err
		}
		// In the map before it is written, so that a second request for
		// the id waits for this write instead of racing it.
		t = &txnState{Metadata: Metadata{TransactionalID: id}, fencedEpoch: -1, lastEpoch: -1}
		c.txns[id] = t
		next := Metadata{TransactionalID: id, ProducerID: pid, ProducerEpoch: 0, Timeout: timeout, State: kmsg.TransactionStateEmpty,
			NextProducerID: -1, PrevProducerID: -1}
		if err := c.writeLocked(ctx, t, next); err != nil {
			if c.txns[id] == t {
				delete(c.txns, id)
			}
			return -1, -1, err
		}
		return pid, 0, nil
	}
	if t.completing {
		return -1, -1, ErrConcurrentTransactions
	}
	retry := expectedID >= 0 && expectedID == t.ProducerID && expectedEpoch != t.ProducerEpoch && t.lastEpoch >= 0 && expectedEpoch == t.lastEpoch
	if expectedID >= 0 && !retry && (expectedID != t.ProducerID || expectedEpoch != t.ProducerEpoch && (t.fencedEpoch < 0 || expectedEpoch != t.fencedEpoch)) {
		return -1, -1, fmt.Errorf("%w: producer %d epoch %d, current %d epoch %d", ErrProducerFenced,
			expectedID, expectedEpoch, t.ProducerID, t.ProducerEpoch)
	}
	switch t.State {
	case kmsg.TransactionStateOngoing:
		// Abort the old instance's transaction at a new epoch, so that its
		// late writes are refused everywhere the marker lands.
		if err := c.beginAbortLocked(ctx, t, false); err != nil {
			return -1, -1, err
		}
		return -1, -1, ErrConcurrentTransactions
	case kmsg.TransactionStatePrepareCommit, kmsg.TransactionStatePrepareAbort:
		// Prepared by a coordinator whose completion did not run here
		// (cannot happen after Load, which resumes it): resume it.
		c.completeLocked(t)
		return -1, -1, ErrConcurrentTransactions
	}
	next := t.Metadata
	next.Timeout, next.State, next.Partitions, next.Start = timeout, kmsg.TransactionStateEmpty, nil, time.Time{}
	next.NextProducerID = -1
	last := int16(-1)
	switch {
	case retry:
		// The producer's epoch was bumped already (its EndTxn or
		// InitProducerID succeeded, the answer was lost): it gets the
		// current epoch, as Kafka's prepareIncrementProducerEpoch answers.
		if err := c.writeLocked(ctx, t, next); err != nil {
			return -1, -1, err
		}
		t.fencedEpoch = -1
		return next.ProducerID, next.ProducerEpoch, nil
	case expectedID >= 0:
		last = t.ProducerEpoch
	}
	if t.ProducerEpoch >= math.MaxInt16-1 {
		// Epochs are exhausted: a new producer id starts again at 0.
		pid, err := c.cfg.ProducerIDs.NewProducerID(ctx)
		if err != nil {
			return -1, -1, err
		}
		next.ProducerID, next.ProducerEpoch = pid, 0
		last = -1 // no epoch of the new id came before
	} else {
		next.ProducerEpoch++
	}
	if err := c.writeLocked(ctx, t, next); err != nil {
		return -1, -1, err
	}
	t.fencedEpoch, t.lastEpoch = -1, last
	return next.ProducerID, next.ProducerEpoch, nil
}

// checkProducerLocked finds id's transaction, once no write of it is
// under way, and checks that producerID and epoch hold it.
func (c *Coordinator) checkProducerLocked(ctx context.Context, id string, producerID int64, epoch int16) (*txnState, error) {
	t, err := c.awaitLocked(ctx, id)
	if err != nil {
		return nil, err
	}
	switch {
	case t == nil || t.ProducerID != producerID:
		return nil, fmt.Errorf("%w: %q, producer %d", ErrInvalidProducerIDMapping, id, producerID)
	case epoch != t.ProducerEpoch:
		return nil, fmt.Errorf("%w: %q epoch %d, current %d", ErrProducerFenced, id, epoch, t.ProducerEpoch)
	}
	return t, nil
}

// AddPartitions adds partitions to id's transaction, opening it if none
// is (Kafka's AddPartitionsToTxn and, for a group's offsets partition,
// AddOffsetsToTxn). tv2 says the request is one of transaction version 2
// (a partition leader's implicit add for Produce v12 or TxnOffsetCommit
// v5): the transaction records it, as Kafka's does, so that a retried
// EndTxn is recognised by its epoch.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, producerID int64, epoch int16, parts []TopicPartition, tv2 bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.checkProducerLocked(ctx, id, producerID, epoch)
	if err != nil {
		return err
	}
	if t.completing || t.State == kmsg.TransactionStatePrepareCommit || t.State == kmsg.TransactionStatePrepareAbort {
		// The previous transaction's markers are being written: the
		// next transaction's first AddPartitionsToTxn follows its EndTxn
		// at once. Waiting for them here (they take milliseconds) saves
		// the client a CONCURRENT_TRANSACTIONS round and its backoff.
		if !c.waitCompletedLocked(ctx, t) {
			return ErrConcurrentTransactions
		}
		if t, err = c.checkProducerLocked(ctx, id, producerID, epoch); err != nil {
			return err
		}
		if t.completing || t.State == kmsg.TransactionStatePrepareCommit || t.State == kmsg.TransactionStatePrepareAbort {
			return ErrConcurrentTransactions
		}
	}
	next := t.Metadata
	if t.State != kmsg.TransactionStateOngoing {
		next.State, next.Partitions, next.Start = kmsg.TransactionStateOngoing, nil, c.now()
	}
	before := len(next.Partitions)
	next.Partitions = sortPartitions(append(append([]TopicPartition(nil), next.Partitions...), parts...))
	if t.State == kmsg.TransactionStateOngoing && len(next.Partitions) == before && next.TV2 == tv2 {
		return nil // every partition is in the transaction already
	}
	next.TV2 = tv2
	return c.writeLocked(ctx, t, next)
}

// beginAbortLocked aborts t's open transaction at a new epoch (Kafka's
// fencing abort, for InitProducerID and timeouts): the markers carry the
// new epoch, which fences the old instance on every partition it wrote.
// After a timeout the fenced epoch is remembered for KIP-360 recovery.
func (c *Coordinator) beginAbortLocked(ctx context.Context, t *txnState, timedOut bool) error {
	fenced := t.ProducerEpoch
	next := t.Metadata
	next.State = kmsg.TransactionStatePrepareAbort
	if next.ProducerEpoch < math.MaxInt16 {
		next.ProducerEpoch++
	}
	if err := c.writeLocked(ctx, t, next); err != nil {
		return err
	}
	if timedOut {
		t.fencedEpoch = fenced
	}
	// The bump was the coordinator's, not the producer's: nothing before
	// it is a retry any more (Kafka's fence resets lastProducerEpoch).
	t.lastEpoch = -1
	c.completeLocked(t)
	return nil
}
