// Package coordlog is the seam between a coordinator and the partition of
// an internal topic it keeps its records in: the group coordinators'
// __consumer_offsets (agent/group) and the transaction coordinators'
// __transaction_state (agent/txn). A coordinator appends its records as
// batches that are durable (acks=all) before it changes its memory, and
// rebuilds that memory on load by replaying the partition up to its high
// watermark. The agent implements Log over a partition led here.
package coordlog

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// Log is one partition of an internal topic, as a coordinator sees it.
type Log interface {
	// Append writes one batch and returns once it is durable (acks=all).
	Append(ctx context.Context, raw []byte) error
	// Read returns whole batches from offset, below the high watermark, at
	// most about maxBytes (at least one batch).
	Read(offset int64, maxBytes int) ([]byte, error)
	LogStartOffset() int64
	HighWatermark() int64
}

// MaxDecompressed bounds one replayed batch once decompressed.
const MaxDecompressed = 64 << 20

// replayChunkBytes is how much of the log one replay read asks for.
const replayChunkBytes = 1 << 20

// Replay calls fn for every batch of l from its start to its high
// watermark, as read when Replay begins, in offset order. It stops at
// fn's first error.
func Replay(l Log, fn func(h batch.Header, raw []byte) error) error {
	start, end := l.LogStartOffset(), l.HighWatermark()
	for offset := start; offset < end; {
		chunk, err := l.Read(offset, replayChunkBytes)
		if err != nil {
			return fmt.Errorf("read at offset %d: %w", offset, err)
		}
		if len(chunk) == 0 {
			break
		}
		next := offset
		if _, err := batch.Split(chunk, func(h batch.Header, raw []byte) error {
			next = h.LastOffset() + 1
			return fn(h, raw)
		}); err != nil {
			return err
		}
		if next <= offset {
			return fmt.Errorf("no progress at offset %d", offset)
		}
		offset = next
	}
	return nil
}

// Records decodes the records of a replayed data batch, each at most
// MaxDecompressed once decompressed.
func Records(raw []byte) ([]batch.Record, error) {
	_, recs, err := batch.Records(raw, MaxDecompressed)
	return recs, err
}
