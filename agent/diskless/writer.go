package diskless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

type writerState int

const (
	stateOpen writerState = iota
	stateDraining
	stateClosed
)

// objectState is where a cut object is: cut → uploading → uploaded or
// failed, then answered and dropped from the queue.
type objectState int

const (
	objectCut objectState = iota
	objectUploading
	objectUploaded
	objectFailed
)

// object is one cut of the buffer, from the cut to its answers.
type object struct {
	id       sharedobj.ID
	cut      time.Time
	deadline time.Time
	bytes    int64 // its batches' bytes, counted in Writer.used until answered

	// guarded by Writer.mu
	state   objectState
	runs    []*run           // until encoded
	header  sharedobj.Header // once encoded
	batches []*pending       // once encoded, in data order
	err     error            // why the upload failed
}

// admission is an Add waiting for room.
type admission struct {
	p    *pending
	raw  []byte        // the caller's, valid while its Add waits
	done chan struct{} // closed once admitted (err nil) or refused
	err  error
}

// Writer is the agent's diskless write buffer: it gathers the batches of
// every diskless partition, cuts them into objects, uploads and commits
// them, and answers each batch. All methods are safe for concurrent use.
type Writer struct {
	cfg       Config
	bucket    objstore.Bucket
	committer Committer
	metrics   *metrics
	logger    *slog.Logger

	// OnUploaded, if set before the first Add and not changed after, is
	// called with each object once it is stored and before its commit,
	// to prime the read cache. data is the whole object and becomes the
	// callback's: the writer neither reads nor writes it again, so the
	// cache may keep it (and it stops counting in BufferMaxBytes). It runs
	// on an upload goroutine and delays that object's commit, so it must
	// not block.
	OnUploaded func(id sharedobj.ID, data []byte)

	cancel context.CancelFunc // ends the goroutines' context: Close
	kick   chan struct{}      // the buffer got its first batch: arm the cut timer
	wg     sync.WaitGroup
	once   sync.Once

	mu       sync.Mutex
	work     *sync.Cond // on mu: an object was cut, uploaded or failed, or the writer closed
	state    writerState
	buf      buffer
	used     int64         // bytes of batches taken and not yet answered
	waiting  []*admission  // Adds waiting for room, in call order
	objects  []*object     // cut and not yet answered, in cut order
	finished chan struct{} // closed and replaced when an object is answered
	// topicName names a topic id in the per-topic counters (NameTopics).
	topicName func(topicID [16]byte) (string, bool)
}

// NewWriter starts a writer that stores objects in bucket and commits
// them through c. Its metrics are registered on reg.
func NewWriter(cfg Config, bucket objstore.Bucket, c Committer, reg prometheus.Registerer, logger *slog.Logger) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if bucket == nil || c == nil {
		return nil, errors.New("diskless: NewWriter needs a bucket and a committer")
	}
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		cfg: cfg, bucket: bucket, committer: c, metrics: newMetrics(reg), logger: logger,
		cancel: cancel, kick: make(chan struct{}, 1),
		buf: newBuffer(cfg.CommitBytes, cfg.CommitInterval), finished: make(chan struct{}),
	}
	w.work = sync.NewCond(&w.mu)
	w.wg.Add(2 + cfg.UploadsInFlight)
	go w.runCuts(ctx)
	go w.runCommits(ctx)
	for range cfg.UploadsInFlight {
		go w.runUploads(ctx)
	}
	return w, nil
}

// Add copies raw, one RecordBatch v2 for the partition (checked by the
// wire server; Add checks only its length and CRC), into the buffer, and
// returns a wait that blocks until the batch's outcome or until wait's
// ctx ends. raw is the caller's again when Add returns. While the buffer
// holds BufferMaxBytes, Add waits for room until ctx ends; Adds that
// wait are admitted in call order, so calls for one partition keep their
// order. Refused with ErrDraining after Drain and ErrClosed after Close.
//
// wait returns the Result (a refusal is Result.Err, with a nil error),
// or an error when no outcome is known: ErrUpload, ErrCommitTimeout,
// ErrClosed, or ctx.Err() when wait's ctx ends first. The others never
// wrap a context error, so errors.Is(err, context.DeadlineExceeded)
// means the caller's own deadline. A wait whose ctx ends before the
// batch's object is first sent to the committer takes the batch out of
// the commit (design §7a, "What a producer sees"), so a client that
// resends elsewhere makes no duplicate; once sent, the writer carries
// on. wait may be called more than once, and need not be called at all
// (acks=0): the batch is committed all the same.
func (w *Writer) Add(ctx context.Context, topicID [16]byte, partition int32, raw []byte) (wait func(ctx context.Context) (Result, error), err error) {
	if partition < 0 {
		return nil, fmt.Errorf("diskless: partition %d of topic %x", partition, topicID)
	}
	if len(raw) > math.MaxInt32 {
		return nil, fmt.Errorf("diskless: batch for %x/%d: %d bytes", topicID, partition, len(raw))
	}
	h, err := batch.Check(raw)
	if err != nil {
		return nil, fmt.Errorf("diskless: batch for %x/%d: %w", topicID, partition, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &pending{key: partKey{topicID, partition}, header: h, size: int64(len(raw)), done: make(chan struct{})}

	w.mu.Lock()
	if err := w.refusal(); err != nil {
		w.mu.Unlock()
		return nil, err
	}
	if len(w.waiting) == 0 && w.roomFor(p.size) {
		w.admit(p, raw)
		w.mu.Unlock()
		return w.waitFunc(p), nil
	}
	a := &admission{p: p, raw: raw, done: make(chan struct{})}
	w.waiting = append(w.waiting, a)
	w.mu.Unlock()

	select {
	case <-a.done:
	case <-ctx.Done():
		w.mu.Lock()
		select {
		case <-a.done: // admitted or refused meanwhile: that stands
		default:
			w.waiting = slices.DeleteFunc(w.waiting, func(x *admission) bool { return x == a })
			w.grant() // it may have held back smaller ones behind it
			w.mu.Unlock()
			return nil, ctx.Err()
		}
		w.mu.Unlock()
	}
	if a.err != nil {
		return nil, a.err
	}
	return w.waitFunc(p), nil
}

// refusal is why a new batch is refused, if it is. Called with mu held.
func (w *Writer) refusal() error {
	switch w.state {
	case stateDraining:
		return ErrDraining
	case stateClosed:
		return ErrClosed
	}
	return nil
}

// roomFor reports whether size more bytes fit. A batch larger than the
// whole limit goes in alone, or it would never go. Called with mu held.
func (w *Writer) roomFor(size int64) bool {
	return w.used == 0 || w.used+size <= w.cfg.BufferMaxBytes
}

// admit copies p's bytes into the buffer, cutting it before p when p
// does not fit in the current object and after p when it is full.
// Called with mu held.
func (w *Writer) admit(p *pending, raw []byte) {
	p.raw = bytes.Clone(raw)
	w.addUsed(p.size)
	now := time.Now()
	if w.buf.cutBefore(p) {
		w.cut(now)
	}
	first := w.buf.empty()
	w.buf.add(now, p)
	switch {
	case w.buf.full():
		w.cut(now)
	case first:
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// grant admits the waiting Adds in order while they fit, or refuses
// them all when the writer no longer takes batches. Called with mu held.
func (w *Writer) grant() {
	for len(w.waiting) > 0 {
		a := w.waiting[0]
		if a.err = w.refusal(); a.err == nil {
			if !w.roomFor(a.p.size) {
				return
			}
			w.admit(a.p, a.raw)
		}
		a.raw = nil
		close(a.done)
		w.waiting = w.waiting[1:]
	}
}

// cut makes an object of the buffer, if it holds any batch still
// wanted. It frees the bytes of batches dropped while buffered without
// granting them: its caller calls grant (or is grant). Called with mu
// held.
func (w *Writer) cut(now time.Time) {
	runs, kept, dropped := w.buf.take()
	w.addUsed(-dropped)
	if len(runs) == 0 {
		return
	}
	id, err := sharedobj.NewID(now)
	if err != nil {
		panic(err) // crypto/rand does not fail since Go 1.24
	}
	w.objects = append(w.objects, &object{id: id, cut: now, deadline: now.Add(w.cfg.CommitTimeout), bytes: kept, runs: runs})
	w.metrics.countTopics(runs, w.nameOf)
	w.work.Broadcast()
}

// NameTopics sets how the per-topic counters
// (strata_diskless_topic_bytes_total, _puts_total) name a topic: fn
// returns the name of a topic id, or false for one it does not know,
// which is then counted under the id in hex, as every topic is before
// NameTopics. fn is called with the writer's lock held, at each cut, so
// it must be quick and must not call the Writer.
func (w *Writer) NameTopics(fn func(topicID [16]byte) (string, bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.topicName = fn
}

// nameOf is topicID's label in the per-topic counters. Called with mu
// held.
func (w *Writer) nameOf(topicID [16]byte) string {
	if w.topicName != nil {
		if name, ok := w.topicName(topicID); ok {
			return name
		}
	}
	return fmt.Sprintf("%x", topicID)
}

func (w *Writer) addUsed(n int64) {
	w.used += n
	w.metrics.buffered.Set(float64(w.used))
}

// waitFunc is Add's wait for p.
func (w *Writer) waitFunc(p *pending) func(ctx context.Context) (Result, error) {
	return func(ctx context.Context) (Result, error) {
		select {
		case <-p.done:
			return p.result, p.err
		case <-ctx.Done():
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if !p.settled && !p.sent {
			p.dropped = true
			w.settle(p, Result{}, ctx.Err(), outcomeDropped)
		}
		if p.settled { // dropped now, or the outcome came at the same time
			return p.result, p.err
		}
		return Result{}, ctx.Err()
	}
}

// settle answers p. Called with mu held.
func (w *Writer) settle(p *pending, r Result, err error, outcome string) {
	if p.settled {
		return
	}
	p.settled, p.result, p.err = true, r, err
	// Counted before the waiter wakes, so that what it reads next of the
	// metrics includes its own outcome.
	w.metrics.outcomes.WithLabelValues(outcome).Inc()
	close(p.done)
}

// finish drops the answered object at the head of the queue and frees
// its bytes. Called with mu held.
func (w *Writer) finish(obj *object) {
	if len(w.objects) == 0 || w.objects[0] != obj {
		panic(fmt.Sprintf("diskless: object %s answered out of cut order", obj.id))
	}
	w.objects[0] = nil
	w.objects = w.objects[1:]
	w.addUsed(-obj.bytes)
	w.metrics.commit.Observe(time.Since(obj.cut).Seconds())
	close(w.finished)
	w.finished = make(chan struct{})
	w.grant()
}

// runCuts cuts the buffer when its oldest batch is CommitInterval old.
// Cuts for size happen in Add.
func (w *Writer) runCuts(ctx context.Context) {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.mu.Lock()
		now := time.Now()
		due, ok := w.buf.due()
		if ok && !now.Before(due) {
			w.cut(now)
			w.grant()
			ok = false
		}
		w.mu.Unlock()
		var fire <-chan time.Time
		if ok {
			timer.Reset(due.Sub(now))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		case <-fire:
		}
	}
}
