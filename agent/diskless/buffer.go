package diskless

import (
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/tiering/sharedobj"
)

// This file is the writer's pure core: when the buffer is cut, which
// batches an object holds and where each lies in it, and how long a
// retry waits. It takes the time as an argument and does no I/O; the
// Writer calls it under its mutex.

// partKey names one diskless partition.
type partKey struct {
	topicID   [16]byte
	partition int32
}

// pending is one batch from Add to its answer. Its identity fields are
// set once before the batch is shared; the rest is guarded by Writer.mu.
type pending struct {
	key    partKey
	header batch.Header
	size   int64

	raw     []byte // the writer's copy, from Add until the object is encoded
	placed  Placed // where the object holds it, once encoded
	sent    bool   // in a commit request: a waiter that gives up no longer drops it
	dropped bool   // its waiter gave up before it was sent: left out of the commit
	settled bool
	result  Result
	err     error
	done    chan struct{} // closed when settled
}

// run is one partition's batches in an object, in arrival order.
type run struct {
	key     partKey
	batches []*pending
}

// buffer is the batches taken since the last cut, grouped by partition.
type buffer struct {
	commitBytes int64
	interval    time.Duration

	runs   []*run
	byKey  map[partKey]*run
	bytes  int64
	oldest time.Time // when the oldest batch arrived; zero when empty
}

func newBuffer(commitBytes int64, interval time.Duration) buffer {
	return buffer{commitBytes: commitBytes, interval: interval, byKey: make(map[partKey]*run)}
}

func (b *buffer) empty() bool { return len(b.runs) == 0 }

// cutBefore reports whether p must go into a new object: the buffer
// already holds something and p would take it past CommitBytes, or p's
// partition would be one run more than an object may hold. So an object
// exceeds CommitBytes only when it is a single batch.
func (b *buffer) cutBefore(p *pending) bool {
	if b.empty() {
		return false
	}
	if b.bytes+p.size > b.commitBytes {
		return true
	}
	_, ok := b.byKey[p.key]
	return !ok && len(b.runs) >= sharedobj.MaxRuns
}

// add appends p to its partition's run.
func (b *buffer) add(now time.Time, p *pending) {
	if b.empty() {
		b.oldest = now
	}
	r := b.byKey[p.key]
	if r == nil {
		r = &run{key: p.key}
		b.byKey[p.key] = r
		b.runs = append(b.runs, r)
	}
	r.batches = append(r.batches, p)
	b.bytes += p.size
}

// full reports whether the buffer must be cut now for its size.
func (b *buffer) full() bool { return b.bytes >= b.commitBytes }

// due is when the buffer must be cut for its age; false when empty.
func (b *buffer) due() (time.Time, bool) {
	if b.empty() {
		return time.Time{}, false
	}
	return b.oldest.Add(b.interval), true
}

// take empties the buffer and returns its runs without the batches whose
// waiter gave up meanwhile (and without runs left empty), the bytes of
// the batches kept, and the bytes of those dropped.
func (b *buffer) take() (runs []*run, kept, dropped int64) {
	for _, r := range b.runs {
		live := r.batches[:0]
		for _, p := range r.batches {
			if p.dropped {
				dropped += p.size
				p.raw = nil
				continue
			}
			live = append(live, p)
			kept += p.size
		}
		if len(live) > 0 {
			r.batches = live
			runs = append(runs, r)
		}
	}
	*b = newBuffer(b.commitBytes, b.interval)
	return runs, kept, dropped
}

// parts is what sharedobj.Encode takes for runs.
func parts(runs []*run) []sharedobj.Part {
	out := make([]sharedobj.Part, len(runs))
	for i, r := range runs {
		raws := make([][]byte, len(r.batches))
		for j, p := range r.batches {
			raws[j] = p.raw
		}
		out[i] = sharedobj.Part{TopicID: r.key.topicID, Partition: r.key.partition, Batches: raws}
	}
	return out
}

// topicShare is one topic's part of a commit object: the bytes of its
// batches in it, and its share of the object's one PUT.
type topicShare struct {
	bytes int64
	put   float64
}

// shares splits an object of runs among its topics: a commit object
// holds the batches of several topics and costs one PUT, which is
// attributed to them in proportion to their bytes in it (docs/design.md
// §7a, "Cost model"), so that the shares of an object add up to one.
func shares(runs []*run) map[[16]byte]topicShare {
	out := make(map[[16]byte]topicShare)
	var total int64
	for _, r := range runs {
		s := out[r.key.topicID]
		for _, p := range r.batches {
			s.bytes += p.size
			total += p.size
		}
		out[r.key.topicID] = s
	}
	for id, s := range out {
		if total > 0 { // every batch holds bytes; an empty object has no share to give
			s.put = float64(s.bytes) / float64(total)
		}
		out[id] = s
	}
	return out
}

// place sets each batch's Placed from the header Encode returned for
// runs, and returns the batches in the object's data order: run by run as
// the header sorts them, each partition's in arrival order. A header
// that disagrees with runs is a bug in the writer or in Encode.
func place(runs []*run, h sharedobj.Header) []*pending {
	if len(h.Runs) != len(runs) {
		panic(fmt.Sprintf("diskless: object %s has %d runs, the writer cut %d", h.ID, len(h.Runs), len(runs)))
	}
	byKey := make(map[partKey]*run, len(runs))
	n := 0
	for _, r := range runs {
		byKey[r.key] = r
		n += len(r.batches)
	}
	out := make([]*pending, 0, n)
	for _, hr := range h.Runs {
		r := byKey[partKey{hr.TopicID, hr.Partition}]
		if r == nil || len(r.batches) != int(hr.Batches) {
			panic(fmt.Sprintf("diskless: object %s: run %x/%d does not match the batches cut", h.ID, hr.TopicID, hr.Partition))
		}
		pos := hr.Position
		for _, p := range r.batches {
			p.placed = Placed{TopicID: hr.TopicID, Partition: hr.Partition, Position: pos, Size: int32(p.size), Header: p.header}
			pos += p.size
		}
		if pos != hr.Position+int64(hr.Length) {
			panic(fmt.Sprintf("diskless: object %s: run %x/%d is %d bytes, its batches %d", h.ID, hr.TopicID, hr.Partition, hr.Length, pos-hr.Position))
		}
		out = append(out, r.batches...)
	}
	return out
}

// Retry waits: the first retry after retryFirst, doubling up to retryMax.
// An object's retries fit in its commit timeout, so their number is
// bounded by it; the shell adds jitter.
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
)

// backoff is the wait before the retry that follows failure number
// failures (1 for the first).
func backoff(failures int) time.Duration {
	if failures < 1 {
		return 0
	}
	d := retryFirst
	for i := 1; i < failures && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}
