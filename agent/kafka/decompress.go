package kafka

// Produce decompresses every compressed batch to check its records, and
// again when it re-encodes one for the topic's compression.type. A few
// hundred compressed bytes can claim hundreds of MiB once decompressed (a
// decompression bomb), so two limits bound that memory:
//
//   - per batch, the decompressed records section may not exceed
//     decompressedLimit(max.message.bytes): 16 times the topic's
//     max.message.bytes, at least 16 MiB, at most half the agent's budget. The
//     codecs stop as soon as their output passes it (agent/log/batch), and
//     the batch is refused with MESSAGE_TOO_LARGE; nothing is appended.
//   - per agent, the Server's decompression budget
//     (Config.DecompressionMaxBytes, --produce-decompression-max-bytes)
//     bounds the bytes all connections may be decompressing at once. A
//     compressed batch takes its per-batch limit from the budget before it
//     is opened, twice over (a buffer growing by doubling holds its old
//     and new halves at once, and the old one is garbage the collector has
//     yet to take), and gives it back once it is written or refused; one that
//     cannot get it waits, at most until the request's timeout (30 s when
//     the request names none), then gets REQUEST_TIMED_OUT, which clients
//     retry.
//
// Taking the whole per-batch limit up front, rather than growing a
// reservation as output arrives, means a batch never holds part of the
// budget while it waits for more, so concurrent bombs cannot deadlock
// each other; the price is that at most budget/(2 × limit) compressed batches
// are checked at once (8 with the defaults), which two cores never
// outrun.

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/semaphore"
)

const (
	// decompressedFactor and decompressedFloor make the per-batch limit:
	// a batch may decompress to decompressedFactor × max.message.bytes,
	// and never less than decompressedFloor.
	decompressedFactor = 16
	decompressedFloor  = 16 << 20
	// DefaultDecompressionBudget is --produce-decompression-max-bytes.
	DefaultDecompressionBudget = 256 << 20
	// budgetWaitMax bounds the wait for the budget when a Produce names no
	// timeout (Kafka's default request.timeout.ms).
	budgetWaitMax = 30 * time.Second
)

// decompressionBudget bounds the bytes that Produce requests of all
// connections hold decompressed at once. Safe for concurrent use.
type decompressionBudget struct {
	sem  *semaphore.Weighted
	size int64
}

// newDecompressionBudget returns a budget of size bytes (at least
// 2 × decompressedFloor, so that one batch always fits).
func newDecompressionBudget(size int64) *decompressionBudget {
	size = max(size, 2*decompressedFloor)
	return &decompressionBudget{sem: semaphore.NewWeighted(size), size: size}
}

// decompressedLimit is the most bytes one batch's records may decompress
// to on a topic with the given max.message.bytes, under budget b (nil for
// none): at most half the budget, since a batch takes twice its limit.
func decompressedLimit(maxMessageBytes int32, b *decompressionBudget) int {
	n := max(int64(maxMessageBytes)*decompressedFactor, decompressedFloor)
	if b != nil {
		n = min(n, b.size/2)
	}
	return int(n)
}

// acquire takes 2n bytes of the budget for a batch of limit n, waiting at most until ctx ends or
// budgetWaitMax passes; release gives them back. A nil budget always has
// room.
func (b *decompressionBudget) acquire(ctx context.Context, n int) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, budgetWaitMax)
		defer cancel()
	}
	w := 2 * int64(n)
	if err := b.sem.Acquire(ctx, w); err != nil {
		return nil, fmt.Errorf("waiting for %d bytes of the decompression budget: %w", w, context.DeadlineExceeded)
	}
	return func() { b.sem.Release(w) }, nil
}
