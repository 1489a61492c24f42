package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/loadstat"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/agent/replica"
	"github.com/strata-streaming/strata/tiering"
)

// Partition is one local replica: its log, the state.json it last applied
// and the replica state machine that decides, from both, what it serves.
// It implements dataplane.Partition and tiering.Source. Leader and follower
// sides are in replication.go, the ISR writer in isrwriter.go, the
// follower's fetcher in fetcher.go and the agent's fetch loops it hands
// its fetches to in fetchers.go, the transactional appends (KIP-890's
// verification guards and the markers) in txnguard.go.
type Partition struct {
	topic   string
	topicID [16]byte
	index   int32
	agentID int32
	log     *log.Log
	// remote is the partition's tiering state, nil while
	// remote.storage.enable is off (it can be turned on at run time).
	// Reads below the local log go to it.
	remote atomic.Pointer[tiering.Partition]
	flush  log.FlushPolicy
	// notify wakes long-polling fetches (consumers' and followers').
	notify func()
	// cluster is the controller's side: ISR writes, state re-reads, peers.
	cluster Cluster
	logger  *slog.Logger
	metrics *Metrics
	// started is closed when the agent serves: the fetcher waits for it.
	started <-chan struct{}
	peer    peer.Options // how the fetcher dials its leader (epoch queries)
	// fetchers are the agent's fetch loops, which fetch this replica's
	// records with the other partitions of its leader (fetchers.go).
	fetchers *Fetchers
	// hw is the high watermark, published after each machine decision so
	// that readers need no lock.
	hw atomic.Int64
	// appended wakes the followers' long polls on this partition alone,
	// at every append and state change (a produce elsewhere does not).
	appended Signal
	// copiedFrom is one more than the first offset this replica copied
	// from a leader since it was opened (0: none yet), so that a move's
	// log line and its test can show where the copy began.
	copiedFrom atomic.Int64
	// load counts the bytes appended and read (one atomic add each) for
	// the balancer's load-aware placement and the load metrics.
	load loadstat.Meter

	// txnMu guards txnGuards, the KIP-890 verifications in flight by
	// producer id (txnguard.go). It is held across a verified batch's or
	// a marker's append, so it comes first: txnMu, then mu, then the
	// log's own lock; nothing that holds mu takes txnMu.
	txnMu     sync.Mutex
	txnGuards map[int64]*txnGuard

	mu  sync.RWMutex
	rep *replica.Machine // changed under the write lock
	// state is the applied state; until the first ApplyState, the stored
	// state the partition was opened in (the machine then has no role).
	state   metadata.PartitionState
	etag    string        // of state, as the store returned it
	hwCh    chan struct{} // closed at every HW advance and state change
	changed chan struct{} // closed at every applied state; wakes the fetcher
	// stopped is closed by Close: the fetcher and ISR writers end.
	stopped   chan struct{}
	fetching  sync.WaitGroup // the fetcher and ISR writers
	minISR    int32
	deleted   bool
	moved     bool           // closed because its replica moved to other agents
	appending sync.WaitGroup // appends in flight, waited for by Close
}

var _ dataplane.Partition = (*Partition)(nil)

func (p *Partition) Index() int32 { return p.index }

func (p *Partition) Leader() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state.Leader
}

func (p *Partition) LeaderEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state.LeaderEpoch
}

func (p *Partition) Replicas() []int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.state.Replicas)
}

func (p *Partition) ISR() []int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.state.ISR)
}

// SetMinISR applies a changed min.insync.replicas.
func (p *Partition) SetMinISR(n int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.minISR = n
	if err := p.rep.SetConfig(p.replicaConfig()); err != nil {
		return // Resolve validated it; the old value stays
	}
	p.publishLocked(replica.LeaderUpdate{HW: p.rep.HighWatermark()}, true)
}

// HighWatermark is what consumers may read: the leader's HW, which counts
// only records the ISR holds (and under log.flush=always, has fsynced).
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// Producers is the log's producer state.
func (p *Partition) Producers() []log.ProducerInfo { return p.log.Producers() }

// LastStableOffset is the log's, bounded by the high watermark.
func (p *Partition) LastStableOffset() int64 { return p.log.LastStableOffset(p.HighWatermark()) }

// AbortedTransactions gathers the aborted transactions that overlap [from,
// upper): the local log's index, after the bucket's below the local log.
func (p *Partition) AbortedTransactions(ctx context.Context, from, upper int64) ([]log.AbortedTxn, error) {
	var out []log.AbortedTxn
	if r := p.remote.Load(); r != nil && from < p.log.LogStartOffset() {
		remote, complete, err := r.AbortedTransactions(ctx, from, upper)
		if err != nil || complete {
			return remote, err
		}
		out = remote
	}
	return append(out, p.log.AbortedTransactions(from, upper)...), nil
}

// Read returns batches from offset: from the local log, or from the bucket
// below the local log start. A remote read waits for the store at most
// until ctx ends.
func (p *Partition) Read(ctx context.Context, offset int64, maxBytes int, minOne bool) ([]byte, error) {
	b, err := p.read(ctx, offset, maxBytes, minOne)
	p.load.AddOut(len(b))
	return b, err
}

func (p *Partition) read(ctx context.Context, offset int64, maxBytes int, minOne bool) ([]byte, error) {
	if start := p.LogStartOffset(); offset < start {
		return nil, fmt.Errorf("%w: offset %d is below the log start %d", log.ErrOffsetOutOfRange, offset, start)
	}
	if p.ReadsFromStore(offset) {
		return p.readRemote(ctx, offset, maxBytes, minOne)
	}
	b, err := p.log.Read(offset, maxBytes, p.HighWatermark(), minOne)
	if errors.Is(err, log.ErrOffsetOutOfRange) && p.ReadsFromStore(offset) {
		// Local retention deleted the segment between the check and the
		// read: it is in the store.
		return p.readRemote(ctx, offset, maxBytes, minOne)
	}
	return b, p.closedErr(err)
}

// Load is the replica's moving averages of bytes in and out as of now
// (package loadstat).
func (p *Partition) Load(now time.Time) loadstat.Rates { return p.load.Rates(now) }

// DecompressionChecks are the log's: its W and the verdicts on older
// batches, below the local log and in the bucket alike.
func (p *Partition) DecompressionChecks() dataplane.DecompressionChecks { return p.log }

// Local implements dataplane.ReplicaInfo: this is a replica on this agent.
func (p *Partition) Local() bool { return true }

// ReadsFromStore reports whether offset lies below the local log of a
// tiered partition: only the store can hold it.
func (p *Partition) ReadsFromStore(offset int64) bool {
	return p.remote.Load() != nil && offset < p.log.LogStartOffset()
}

// staleBucketEnd is how old a bucket end a read below the local log may
// trust before it re-reads the manifest.
const staleBucketEnd = time.Second

func (p *Partition) readRemote(ctx context.Context, offset int64, maxBytes int, minOne bool) ([]byte, error) {
	r := p.remote.Load()
	if offset >= r.Next() {
		// Below the local log, which starts at or below the bucket's end,
		// yet past that end as this replica last read it: the end is
		// stale (its log restarted at a leader's local start, and it led
		// before re-reading the manifest). Re-read it rather than answer
		// OFFSET_OUT_OF_RANGE, which makes consumers reset; a failure is
		// a storage error, which they retry.
		if err := r.Refresh(ctx, time.Now().Add(-staleBucketEnd)); err != nil {
			return nil, fmt.Errorf("topic %s partition %d: re-read the bucket's end: %w", p.topic, p.index, err)
		}
	}
	b, err := r.Read(ctx, offset, maxBytes, minOne)
	if errors.Is(err, tiering.ErrNotInBucket) {
		err = fmt.Errorf("%w: %v", log.ErrOffsetOutOfRange, err)
	}
	if err == nil && b == nil && minOne {
		// Compaction left nothing from offset to the bucket's end: the next
		// batch is the local log's first, as a gap in the local log reads.
		if start := p.log.LogStartOffset(); start > offset && start <= r.Next() {
			b, err = p.log.Read(start, maxBytes, p.HighWatermark(), minOne)
			return b, p.closedErr(err)
		}
	}
	return b, err
}

// FindByTimestamp searches the bucket first: its records are the older.
func (p *Partition) FindByTimestamp(ctx context.Context, ts int64) ([]byte, error) {
	if r := p.remote.Load(); r != nil && !r.Empty() {
		b, err := r.FindByTime(ctx, ts)
		if err != nil || b != nil {
			return b, err
		}
	}
	b, err := p.log.FindByTimestamp(ts)
	return b, p.closedErr(err)
}

func (p *Partition) MaxTimestampBatch() ([]byte, error) {
	b, err := p.log.MaxTimestampBatch()
	return b, p.closedErr(err)
}

func (p *Partition) DeleteRecordsBefore(ctx context.Context, offset int64) error {
	if r := p.remote.Load(); r != nil {
		return p.closedErr(r.DeleteRecords(ctx, offset))
	}
	if p.log.Remote() {
		// Tiered, but its tiering has not opened yet (the store failed;
		// it is retried): a local delete would leave the bucket's start
		// behind, and the deleted records readable from there.
		return fmt.Errorf("%w: topic %s partition %d: tiering has not started yet", log.ErrStorage, p.topic, p.index)
	}
	return p.closedErr(p.log.DeleteRecordsBefore(offset))
}

// closedErr turns the error of a log closed under a request into what the
// client should hear: requests that raced a DeleteTopic ask for a partition
// that no longer exists (the agent's own shutdown closes connections before
// logs, so no client sees that case).
func (p *Partition) closedErr(err error) error {
	if errors.Is(err, log.ErrClosed) {
		return fmt.Errorf("%w: %s-%d was deleted", dataplane.ErrUnknownTopicOrPartition, p.topic, p.index)
	}
	return err
}

// LogStartOffset is the first offset readable anywhere. With tiering the
// manifest's start is the truth: it holds the oldest records, and a
// DeleteRecords moves it (also past what is uploaded) before any replica's
// local log; a replica that led before the delete, or followed, may still
// hold the deleted records locally, and must not serve them.
func (p *Partition) LogStartOffset() int64 {
	local := p.log.LogStartOffset()
	if r := p.remote.Load(); r != nil && (!r.Empty() || r.Start() > local) {
		return r.Start()
	}
	return local
}

// LocalLogStartOffset is the first offset on this agent's disk (ListOffsets
// -4, KIP-1005).
func (p *Partition) LocalLogStartOffset() int64 { return p.log.LogStartOffset() }

// HighestTieredOffset is the last offset in the bucket, -1 if none
// (ListOffsets -5, KIP-1005).
func (p *Partition) HighestTieredOffset() int64 {
	r := p.remote.Load()
	if r == nil || r.Empty() {
		return -1
	}
	return r.Next() - 1
}
func (p *Partition) LogEndOffset() int64 { return p.log.LogEndOffset() }
func (p *Partition) Size() int64         { return p.log.Size() }

func (p *Partition) OffsetForLeaderEpoch(currentEpoch, epoch int32) (int32, int64, error) {
	p.mu.RLock()
	ans, err := p.rep.OffsetForLeaderEpoch(currentEpoch, epoch, p.log)
	p.mu.RUnlock()
	if errors.Is(err, replica.ErrUnknownLeaderEpoch) {
		p.cluster.RefreshState(p)
	}
	return ans.Epoch, ans.EndOffset, err
}

// Close marks the partition deleted (new appends fail), stops the
// fetcher and ISR writers and waits for them, waits for appends in flight,
// stops its tiering and closes the log (fsync and clean-shutdown mark). It
// may be called twice.
func (p *Partition) Close() error {
	p.mu.Lock()
	if !p.deleted {
		p.deleted = true
		close(p.stopped)
		p.signalLocked()
	}
	p.mu.Unlock()
	p.fetching.Wait()
	p.appending.Wait()
	if r := p.remote.Load(); r != nil {
		r.Close()
	}
	return p.log.Close()
}

// The tiering.Source methods.
func (p *Partition) Topic() string     { return p.topic }
func (p *Partition) TopicID() [16]byte { return p.topicID }
func (p *Partition) Log() tiering.Log  { return tierLog{p.log} }
func (p *Partition) Leading() bool     { return p.Leader() == p.agentID }

// LocalLog is the partition's log, for the agent's retention loop, its
// statistics and tests; the partition owns it, and callers must not close
// it.
func (p *Partition) LocalLog() *log.Log { return p.log }

// Remote is the partition's tiering state, nil while it is not tiered.
func (p *Partition) Remote() *tiering.Partition { return p.remote.Load() }

// CopiedFrom is the first offset this replica copied from a leader since
// it was opened, -1 if none.
func (p *Partition) CopiedFrom() int64 { return p.copiedFrom.Load() - 1 }

// OpenTiering opens the partition's manifest with t: with an empty local
// log and a bucket that holds the partition, the log continues after the
// bucket's end. Tiering reads whether this replica leads, so it opens
// before the first ApplyState, in the state the partition was opened in.
func (p *Partition) OpenTiering(ctx context.Context, t *tiering.Tierer) error {
	r, err := t.Open(ctx, p, metadata.PartitionPrefix(p.topicID, p.index))
	if err != nil {
		return fmt.Errorf("topic %s partition %d: %w", p.topic, p.index, err)
	}
	p.remote.Store(r)
	return nil
}

// CloseAll closes parts, at most workers at a time, and joins their
// errors: each close is an fsync and a clean-shutdown mark, which a disk
// serves faster side by side than one after another.
func CloseAll(parts []*Partition, workers int) error {
	errs := make([]error, len(parts))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(parts)) {
		wg.Go(func() {
			for i := range next {
				if err := parts[i].Close(); err != nil {
					errs[i] = fmt.Errorf("close %s-%d: %w", parts[i].topic, parts[i].index, err)
				}
			}
		})
	}
	for i := range parts {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
