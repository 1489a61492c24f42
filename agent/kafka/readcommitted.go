package kafka

// read_committed (KIP-98): a consumer that asks for it reads only below the
// partition's last stable offset, and gets with the records the aborted
// transactions that overlap them, so that it drops those producers'
// batches in those ranges. Both Fetch (fetch.go) and ListOffsets
// (listoffsets.go) take it from the request's isolation level.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// isolationReadCommitted is the isolation level of read_committed.
const isolationReadCommitted = 1

// stableBatches cuts data, whole batches, before the first batch that
// reaches lso, and returns the offset after the last batch kept (-1 when
// none is).
func stableBatches(data []byte, lso int64) ([]byte, int64) {
	end, next := 0, int64(-1)
	for end < len(data) {
		h, err := batch.ParseHeader(data[end:])
		if err != nil || h.LastOffset() >= lso || end+h.Size() > len(data) {
			break
		}
		end += h.Size()
		next = h.NextOffset()
	}
	return data[:end], next
}

// abortedTransactions answers the aborted transactions of [from, upper)
// in the Fetch response's form: empty, not null, when there are none, as
// Kafka answers a read_committed fetch.
func abortedTransactions(ctx context.Context, p PartitionReader, from, upper int64) ([]kmsg.FetchResponseTopicPartitionAbortedTransaction, error) {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if upper <= from {
		return out, nil
	}
	aborted, err := p.AbortedTransactions(ctx, from, upper)
	if err != nil {
		return nil, err
	}
	for _, a := range aborted {
		t := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		t.ProducerID, t.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, t)
	}
	return out, nil
}
