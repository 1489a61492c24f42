package kafka

// Quarantine of decompression bombs stored before Produce bounded
// decompression (issue 19, decompress.go). Such a batch was accepted then
// and is still in the log or the bucket; served as stored, it costs each
// consumer hundreds of MiB and the consumer never gets past it. Fetch
// serves batches without decompressing them, so nothing here touches
// batches that Produce checked: a partition's DecompressionChecks say from
// which offset W every batch was checked on append, and the only cost a
// fetch above W pays is comparing its first batch's base offset with W.
//
// A compressed batch below W is checked the first time a fetch serves it:
// streamed through its codec with the output counted and dropped
// (batch.CheckDecompressedSize), against the same per-batch limit as
// Produce (decompressedLimit of the topic's max.message.bytes), holding
// the same share of the --produce-decompression-max-bytes budget as a
// Produce batch; a check that cannot get the budget before the fetch's
// deadline ends the answer before that batch, and the client fetches
// again. The verdict is kept with the log, so each batch is checked once.
// A batch over the limit is served in Kafka's empty-batch form
// (batch.Emptied): its offsets, epoch and producer fields stay, its
// records go. Kafka's log compaction leaves the same form, and clients
// move past its last offset (franz-go since KAFKA-5443, librdkafka's
// msgset reader), so consumers skip the bomb's offsets and read on.
// Batches that do not decode at all are served as stored, as before.
//
// Followers get what consumers get: a follower's copy of a quarantined
// batch is the empty form, so its log is checked throughout and its W
// holds for what it copies. Reads from the bucket pass through the same
// rule (offsets below a restarted follower's start count as below W).

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
)

// quarantine returns data, whole batches of partition index of t as read
// for a fetch, with every batch below W that decompresses past the limit
// replaced by its empty form. It returns data itself when nothing below W
// is in it, else a new slice, shorter than data when the decompression
// budget did not allow checking every batch before ctx ended.
func (s *Server) quarantine(ctx context.Context, t *Topic, index int32, checks DecompressionChecks, start int64, data []byte) []byte {
	if checks == nil || len(data) < 8 {
		return data
	}
	w := checks.ValidatedFrom()
	if int64(binary.BigEndian.Uint64(data)) >= w {
		return data // the hot path: everything here was checked on append
	}
	var out []byte // nil until a batch is replaced
	var verdicts []log.CheckVerdict
	defer func() {
		if len(verdicts) > 0 {
			if err := checks.RecordChecks(start, verdicts); err != nil {
				s.logger.Warn("cannot keep decompression verdicts; the batches will be checked again", "topic", t.Name, "partition", index, "err", err)
			}
		}
	}()
	pos := 0
	for pos < len(data) {
		size, err := batch.PeekSize(data[pos:])
		if err != nil || size > len(data)-pos {
			break // a partial batch at the end: served as read
		}
		raw := data[pos : pos+size]
		h, err := batch.ParseHeader(raw)
		if err != nil || h.BaseOffset >= w {
			break
		}
		bad := false
		if h.Codec() != batch.CodecNone {
			var known bool
			if known, bad = checks.CheckedVerdict(h.BaseOffset, h.CRC); !known {
				if bad, err = s.checkStored(ctx, t, index, &h, raw); err != nil {
					// No budget before the deadline: answer with the
					// batches before this one.
					if out == nil {
						return data[:pos]
					}
					return out
				}
			}
		}
		// Every batch walked, known or not, so that the checked range
		// covers the whole run; RecordChecks writes only what changed.
		verdicts = append(verdicts, log.CheckVerdict{BadBatch: log.BadBatch{Base: h.BaseOffset, CRC: h.CRC}, Next: h.NextOffset(), Bad: bad})
		switch {
		case bad:
			if out == nil {
				out = append(make([]byte, 0, len(data)), data[:pos]...)
			}
			empty, _ := batch.Emptied(raw) // cannot fail: the header parsed
			out = append(out, empty...)
		case out != nil:
			out = append(out, raw...)
		}
		pos += size
	}
	if out == nil {
		return data
	}
	return append(out, data[pos:]...)
}

// checkStored decides whether a stored batch decompresses past the limit
// Produce applies to the topic now, holding the budget while it streams.
// It fails only when the budget could not be had before ctx ended.
func (s *Server) checkStored(ctx context.Context, t *Topic, index int32, h *batch.Header, raw []byte) (bad bool, err error) {
	limit := decompressedLimit(t.Resolved.MaxMessageBytes, s.decompression)
	release, err := s.decompression.acquire(ctx, limit)
	if err != nil {
		return false, err
	}
	defer release()
	err = batch.CheckDecompressedSize(h.Codec(), raw[batch.HeaderSize:], limit)
	bad = errors.Is(err, batch.ErrDecompressLimit)
	s.metrics.decompressionChecked(bad)
	if bad {
		s.logger.Warn("serving a batch stored before the decompression limit as an empty batch",
			"topic", t.Name, "partition", index, "base_offset", h.BaseOffset, "last_offset", h.LastOffset(),
			"codec", h.Codec().String(), "compressed_bytes", len(raw), "limit_bytes", limit)
	}
	return bad, nil
}
