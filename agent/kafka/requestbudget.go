package kafka

// The request budget (Kafka's queued.max.request.bytes, here
// --queued-max-request-bytes) bounds the bytes of requests that all
// connections have read and not yet answered. A connection takes a
// frame's size from the budget once the frame has arrived and before it is
// decoded; while the budget has no room, the connection waits and reads
// nothing more, as Kafka mutes a channel, so the client's next bytes wait
// in its socket and no request is refused or lost. The bytes are given
// back once the request's answer is written (or dropped with its
// connection), except for a Produce, whose frame is given back as soon as
// its batches are in the log: its answer then waits for acks, and those
// may wait for followers' Fetches to this very agent, which must not wait
// for a budget the Produces hold.
//
// The budget bounds what a request costs once decoded: the decoded
// request and its answer are several times its frame (about 100 bytes a
// topic each for CreateTopics and Metadata, against 20 to 30 on the wire),
// and without the budget eight Metadata requests of a million names took
// 2.7 GB. It does not count a frame still arriving, unlike Kafka, which
// takes the claimed size from its pool when it reads a frame's length: a
// client that claims 100 MiB and sends it slowly, or never, would then
// hold the budget, and every other connection, for connections-max-idle.
// Frames in transit are bounded by the bytes that actually arrived
// (readFrameBody), as before, and each connection holds at most one.
//
// A frame larger than the whole budget takes all of it: it is handled once
// every other request has given its bytes back, so a budget below
// socket.request.max.bytes never stops a connection for good. Nothing that
// holds the budget waits for the budget, so the wait always ends; the
// semaphore serves waiters in order, so a large frame is not starved by
// small ones that keep arriving.

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultQueuedMaxRequestBytes is --queued-max-request-bytes. Kafka's
// default is unbounded; see docs/compatibility.md.
const DefaultQueuedMaxRequestBytes = 32 << 20

// requestBudget is the budget shared by every connection of a Server.
// Safe for concurrent use; a nil budget is unbounded.
type requestBudget struct {
	sem   *semaphore.Weighted
	size  int64
	inUse atomic.Int64
	m     *metrics
}

// newRequestBudget returns a budget of size bytes, or nil (unbounded) when
// size is not positive.
func newRequestBudget(size int64, m *metrics) *requestBudget {
	if size <= 0 {
		return nil
	}
	return &requestBudget{sem: semaphore.NewWeighted(size), size: size, m: m}
}

// take waits until a frame of n bytes fits in the budget (the whole budget
// for a frame larger than it), or until ctx ends. The returned release
// gives the bytes back; it may be called more than once.
func (b *requestBudget) take(ctx context.Context, n int) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	w := min(int64(n), b.size)
	if !b.sem.TryAcquire(w) {
		b.m.requestBudgetWaited()
		if err := b.sem.Acquire(ctx, w); err != nil {
			return nil, err
		}
	}
	b.m.requestBytes(b.inUse.Add(w))
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			b.m.requestBytes(b.inUse.Add(-w))
			b.sem.Release(w)
		}
	}, nil
}
