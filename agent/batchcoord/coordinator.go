package batchcoord

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/coordlog"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
)

// ErrClosed: the coordinator was closed (its partition is led elsewhere
// now, or an append failed and its memory may be ahead of its log). The
// caller looks the coordinator up again, which replays the partition.
var ErrClosed = errors.New("batchcoord: coordinator closed")

// ErrCommitTooOld: an object was cut longer ago than the commit timeout,
// so the orphan janitor may already have deleted it; its batches are
// refused rather than committed.
var ErrCommitTooOld = errors.New("batchcoord: object cut longer ago than --diskless-commit-timeout")

// Config is a coordinator's settings.
type Config struct {
	// Epoch is the coordinator's epoch: the leader epoch at which this
	// agent leads the partition of __diskless_state. Committed batches
	// carry it as their partition leader epoch.
	Epoch int32
	// CommitTimeout is --diskless-commit-timeout: objects cut longer ago
	// are refused, and repeated commits of younger ones are answered from
	// memory.
	CommitTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Coordinator is the batch coordinator of one partition of
// __diskless_state: the authority of every diskless partition that
// hashes to it (package doc).
type Coordinator struct {
	partition int32
	log       coordlog.Log
	cfg       Config
	logger    *slog.Logger

	// commitMu serializes commits: each is decided against the state the
	// previous one left, and appended after it.
	commitMu sync.Mutex

	mu     sync.Mutex
	closed bool
	parts  map[PartitionKey]*partState
	// recent holds the objects committed within CommitTimeout: a
	// repeated commit of one is answered from here.
	recent map[[16]byte]*committedObject
}

// partState is one diskless partition as its coordinator knows it.
type partState struct {
	logStart  int64
	index     *Index
	epochs    []EpochStart
	producers *producers.State
	// aborted are the aborted transactions whose marker is in the index,
	// in marker order, for read_committed fetches.
	aborted []Aborted
	// runStarts are the base offsets of the Run records the index holds,
	// in order: the only places where its start may move, since a Run
	// record is tombstoned whole.
	runStarts []int64
	// baseSnap is the producer state at the index's start, encoded
	// (producers.State.Encode; nil: the empty state at offset 0), as the
	// last Partition record holds it.
	baseSnap []byte
	// guards are the KIP-890 verification guards (Guard): producer id →
	// epoch. A marker of the producer removes its guard. Memory only: a
	// new coordinator has none, and batches that needed one are refused
	// until their producer verifies again.
	guards map[int64]int16
	// moved is closed, and replaced, whenever the high watermark moves:
	// long-polled index requests wait on it.
	moved chan struct{}
}

func newPartState(end int64) *partState {
	return &partState{index: NewIndex(end), producers: producers.New(), guards: map[int64]int16{}, moved: make(chan struct{})}
}

// Aborted is an aborted transaction of a diskless partition: its
// producer and its offsets from its first batch to its marker.
type Aborted struct {
	ProducerID, FirstOffset, LastOffset int64
}

// completed records what a committed marker did: an abort's range, and
// the end of the producer's guard.
func (p *partState) completed(done *producers.Completed) {
	if done == nil {
		return
	}
	delete(p.guards, done.ProducerID)
	if done.Aborted {
		p.aborted = append(p.aborted, Aborted{ProducerID: done.ProducerID, FirstOffset: done.FirstOffset, LastOffset: done.MarkerOffset})
	}
}

// extend adds a committed run to p's index and epoch history.
func (p *partState) extend(k RunKey, run Run) error {
	if err := p.index.Append(k.BaseOffset, run); err != nil {
		return fmt.Errorf("partition %x/%d: %w", k.TopicID, k.Partition, err)
	}
	if n := len(p.epochs); n == 0 || p.epochs[n-1].Epoch < run.Epoch {
		p.epochs = append(p.epochs, EpochStart{Epoch: run.Epoch, StartOffset: k.BaseOffset})
	}
	p.runStarts = append(p.runStarts, k.BaseOffset)
	return nil
}

// committedObject is what a commit of an object decided for each of its
// batches that got an offset.
type committedObject struct {
	cutMs   int64
	offsets map[placedKey]int64 // batch → base offset
}

// placedKey names a batch of an object: its partition and position.
type placedKey struct {
	PartitionKey
	position int64
}

// part returns k's state, creating an empty partition on first sight: a
// diskless partition's first commit starts it at offset 0.
func (c *Coordinator) part(k PartitionKey) *partState {
	p, ok := c.parts[k]
	if !ok {
		p = newPartState(0)
		c.parts[k] = p
	}
	return p
}

// remember records the offsets a run gave its object's batches.
func (c *Coordinator) remember(id [16]byte, commitMs int64, k RunKey, run Run) {
	o, ok := c.recent[id]
	if !ok {
		o = &committedObject{cutMs: commitMs, offsets: map[placedKey]int64{}}
		c.recent[id] = o
	}
	for _, s := range run.Batches {
		o.offsets[placedKey{k.PartitionKey, s.Position}] = k.BaseOffset + int64(s.OffsetDelta)
	}
}

// header rebuilds the batch header fields the producer rules read.
func (s StoredBatch) header(base int64) batch.Header {
	return batch.Header{
		BaseOffset: base + int64(s.OffsetDelta), LastOffsetDelta: s.LastOffsetDelta,
		MaxTimestamp: s.MaxTimestamp, ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch,
		BaseSequence: s.BaseSequence, Attributes: s.Attributes, RecordCount: s.LastOffsetDelta + 1,
	}
}

// Partition is the partition of __diskless_state this coordinator serves.
func (c *Coordinator) Partition() int32 { return c.partition }

// Epoch is the coordinator's epoch.
func (c *Coordinator) Epoch() int32 { return c.cfg.Epoch }

// Close stops the coordinator: later calls fail with ErrClosed, and
// long polls return. It may be called more than once.
func (c *Coordinator) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

// Closed reports whether the coordinator was closed, by Close or by
// itself after a failed append.
func (c *Coordinator) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
