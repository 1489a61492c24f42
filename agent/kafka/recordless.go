package kafka

// Record-less answers. A cleaned compacted log holds batches with no
// records: the cleaner keeps each producer's last batch, emptied, so that
// the producer's sequence survives (docs/design.md's cleaner), and a
// segment may end up holding nothing else. Kafka reads one segment per
// Fetch, so a fetch at such a batch gets only record-less batches, which
// a correct client steps over (next offset = the last batch's
// lastOffset+1). Three clients we support do not: kafka-python 2.0 fails
// with IndexError, kafkajs 2.2 fetches the same offset forever, and
// segmentio/kafka-go 0.4 never returns a message. Fetch therefore reads
// on past an answer whose batches hold no record a consumer is handed
// (empty batches, control batches), into the following segments, until it
// holds one that does, the high watermark, or the byte limit.

import (
	"context"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// maxRecordlessReads bounds the extra reads of one partition's answer:
// each reads at least one more batch, and a run of segments holding only
// empty batches is rare (one per producer that stopped writing).
const maxRecordlessReads = 8

// readPastRecordless extends data, read from a partition for a consumer
// with maxBytes and minOne, while all of its batches are record-less. An
// extra read that fails leaves data as it was: it is a valid answer, and
// the client asks again from its end.
func readPastRecordless(ctx context.Context, p PartitionReader, data []byte, maxBytes int, minOne bool) []byte {
	for range maxRecordlessReads {
		next, ok := recordlessEnd(data)
		if !ok || next >= p.HighWatermark() {
			return data
		}
		// KIP-74 as for the first read: with minOne the batch that carries
		// records comes whole even past maxBytes, so the client progresses.
		more, err := p.Read(ctx, next, maxBytes-len(data), minOne)
		if err != nil || len(more) == 0 {
			return data
		}
		data = append(data, more...)
	}
	return data
}

// recordlessEnd returns the offset after data's last batch and whether
// data holds batches, none of them with a record a consumer is handed.
func recordlessEnd(data []byte) (next int64, ok bool) {
	for pos := 0; pos < len(data); {
		h, err := batch.ParseHeader(data[pos:])
		if err != nil || pos+h.Size() > len(data) || h.RecordCount > 0 && !h.IsControl() {
			return 0, false
		}
		pos += h.Size()
		next = h.NextOffset()
	}
	return next, len(data) > 0
}
