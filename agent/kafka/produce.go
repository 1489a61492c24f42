package kafka

// Produce (key 0), versions 3-13.
//
// Versions 0-2 (magic 0/1 message sets) are not served, as in Kafka 4; a
// magic 0/1 batch inside a v3+ request gets UNSUPPORTED_FOR_MESSAGE_FORMAT.
// Each partition must carry exactly one batch (Kafka's rule for v3+). The
// batch is checked in full (CRC, record framing, counts, timestamps) before
// it reaches the log; it is re-encoded only when the topic's
// compression.type names a codec other than the batch's. Transactional
// batches are written as any other; the log opens the producer's
// transaction and refuses a fenced epoch (INVALID_PRODUCER_EPOCH) or a
// plain batch inside an open transaction (INVALID_TXN_STATE). As
// in Kafka (KIP-890 part 1), a producer's first transactional batch in a
// partition is first verified with its coordinator (txnverify.go; the
// partition holds the verification guards, agent/partition/txnguard.go):
// INVALID_TXN_STATE if the partition is not in the transaction. From v12
// on (KIP-890 part 2, transaction version 2) the leader asks the
// coordinator to add the partition instead, so the client sends no
// AddPartitionsToTxn, as with Kafka 4.x.
// A diskless topic's batch goes to the agent's diskless write buffer
// (dataplane.DeferredWriter, agent/diskless) and is answered once its
// object is in the bucket and committed, with the offsets the batch
// coordinator gave; see docs/compatibility.md, "Diskless topics".
// A request's batches are written in order, then their acks are awaited
// concurrently, so their fsyncs overlap instead of adding up; a
// connection's next Produce is written while this one waits (see
// serveConn), as Kafka's clients pipeline up to five per connection.
// With log.flush=always every acks level is answered after an fsync
// covering the batch (Kafka answers acks=1 from the page cache); acks=all
// below min.insync.replicas is NOT_ENOUGH_REPLICAS before anything is
// written, as in Kafka. Internal topics
// (__consumer_offsets) refuse client produces with INVALID_TOPIC_EXCEPTION,
// as in Kafka. Unlike Kafka, a compressed batch whose records decompress to
// more than 16 × max.message.bytes (at least 16 MiB) is refused with
// MESSAGE_TOO_LARGE, and decompression across connections is bounded by
// --produce-decompression-max-bytes (decompress.go); Kafka bounds only
// the compressed size.
//
// Authorization (authorize.go): WRITE on each topic, else
// TOPIC_AUTHORIZATION_FAILED on its partitions; a transactional produce
// also needs WRITE on its TRANSACTIONAL_ID, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
)

// maxDecompressed bounds the decompressed size of one stored batch that
// ListOffsets opens; Produce bounds what it accepts far lower
// (decompress.go), so stored batches never come near it.
const maxDecompressed = 256 << 20

// handleProduce is a Produce answered in one go, for dispatch's callers
// (the fuzz and table tests); serveConn splits startProduce and finish
// itself to pipeline a connection's Produces.
func handleProduce(ctx context.Context, s *Server, r *request, req *kmsg.ProduceRequest) (*kmsg.ProduceResponse, error) {
	resp := s.startProduce(ctx, r, req).finish()
	if resp == nil {
		return nil, nil
	}
	return resp.(*kmsg.ProduceResponse), nil
}

// produceCall is a Produce request whose batches are written (or refused)
// and whose acknowledgements finish awaits. Splitting the two lets a
// connection write its next request's batches while this one waits for
// its fsync, so pipelined requests share fsyncs instead of queueing for
// one each.
type produceCall struct {
	s       *Server
	resp    *kmsg.ProduceResponse
	acks    int16
	ctx     context.Context
	cancel  context.CancelFunc
	pending []pendingAppend
	txnID   *string // the request's transactional id (txnverify.go)
	// txnAdd: Produce v12+ adds a transactional batch's partition to the
	// transaction (KIP-890 part 2) instead of verifying it.
	txnAdd bool
}

// pendingAppend is one partition's written batch awaiting its acks.
type pendingAppend struct {
	wait AppendWait
	// deferred replaces wait for a DeferredWriter, whose result it
	// returns.
	deferred func(context.Context) (log.AppendResult, error)
	res      log.AppendResult
	rp       *kmsg.ProduceResponseTopicPartition
	topic    string
	bytes    int
	records  int // the batch header's record count
}

// startProduce checks and writes every partition's batch, in request order.
func (s *Server) startProduce(ctx context.Context, r *request, req *kmsg.ProduceRequest) *produceCall {
	call := &produceCall{s: s, resp: req.ResponseKind().(*kmsg.ProduceResponse), acks: req.Acks, ctx: ctx, cancel: func() {},
		txnID: req.TransactionID, txnAdd: r.version >= 12}
	if req.TimeoutMillis > 0 {
		call.ctx, call.cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
	}
	acks := req.Acks
	txnDenied := req.TransactionID != nil && !s.authorized(r, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID)
	for i := range req.Topics {
		rt := &req.Topics[i]
		rtopic := kmsg.NewProduceResponseTopic()
		rtopic.Topic, rtopic.TopicID = rt.Topic, rt.TopicID
		var t *Topic
		var ok bool
		if r.version >= 13 {
			t, ok = s.topics.TopicByID(rt.TopicID)
		} else {
			t, ok = s.topics.Topic(rt.Topic)
		}
		denied := s.deniedTopic(r, kmsg.ACLOperationWrite, rt.Topic, t, ok, r.version >= 13)
		rtopic.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for j := range rt.Partitions {
			rp := &rtopic.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = rt.Partitions[j].Partition
			switch {
			case acks != 0 && acks != 1 && acks != -1:
				rp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case txnDenied:
				rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case denied:
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !ok && r.version >= 13:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case !ok:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				s.writePartition(call, t, t.Partitions[rp.Partition], rt.Partitions[j].Records, rp)
			}
		}
		call.resp.Topics = append(call.resp.Topics, rtopic)
	}
	return call
}

// writePartition checks one partition's batch and writes it, leaving the
// wait for its acks to finish.
func (s *Server) writePartition(call *produceCall, t *Topic, p PartitionWriter, records []byte, rp *kmsg.ProduceResponseTopicPartition) {
	if p.Leader() != s.cluster.AgentID() {
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	if t.Internal {
		rp.ErrorCode = kerr.InvalidTopicException.Code
		rp.ErrorMessage = strptr("topic " + t.Name + " is internal; clients cannot produce to it")
		return
	}
	raw, release, err := prepareBatch(call.ctx, t.Resolved, records, time.Now(), s.decompression)
	defer release()
	if err != nil {
		rp.ErrorCode = errorCode(err)
		rp.ErrorMessage = errorMessage(err)
		return
	}
	pa := pendingAppend{rp: rp, topic: t.Name, bytes: len(raw)}
	if h, err := batch.ParseHeader(raw); err == nil { // prepareBatch checked it
		pa.records = int(h.RecordCount)
	}
	if dw, ok := p.(DeferredWriter); ok {
		pa.deferred, err = dw.AppendDeferred(call.ctx, raw, call.acks, call.txnID, call.txnAdd, call.verifyTxn(t.Name, rp.Partition))
	} else {
		pa.res, pa.wait, err = p.AppendTransactional(call.ctx, raw, call.acks, call.txnID, call.txnAdd, call.verifyTxn(t.Name, rp.Partition))
	}
	if err != nil {
		rp.ErrorCode = errorCode(err)
		rp.ErrorMessage = errorMessage(err)
		return
	}
	call.pending = append(call.pending, pa)
}

// finish waits for every written batch's acks, all at once so that their
// fsyncs and replication overlap, and returns the answer (nil for acks=0).
func (c *produceCall) finish() kmsg.Response {
	defer c.cancel()
	if len(c.pending) == 1 {
		c.await(&c.pending[0])
	} else {
		var wg sync.WaitGroup
		for i := range c.pending {
			wg.Go(func() { c.await(&c.pending[i]) })
		}
		wg.Wait()
	}
	if c.acks == 0 {
		return nil
	}
	return c.resp
}

func (c *produceCall) await(pa *pendingAppend) {
	var err error
	if pa.deferred != nil {
		pa.res, err = pa.deferred(c.ctx)
	} else {
		err = pa.wait(c.ctx)
	}
	if err != nil {
		pa.rp.ErrorCode = errorCode(err)
		pa.rp.ErrorMessage = errorMessage(err)
		return
	}
	c.s.metrics.in(pa.topic, pa.bytes, pa.records)
	pa.rp.BaseOffset = pa.res.BaseOffset
	pa.rp.LogAppendTime = pa.res.LogAppendTime
	pa.rp.LogStartOffset = pa.res.LogStartOffset
}

// prepareBatch checks one produced batch against the topic's settings and
// returns the bytes to append (possibly re-encoded or re-stamped). A
// compressed batch first takes its decompressed-size limit from budget
// (decompress.go); the caller calls release, always, once the bytes are
// appended or refused.
func prepareBatch(ctx context.Context, cfg metadata.Resolved, records []byte, now time.Time, budget *decompressionBudget) (raw []byte, release func(), err error) {
	release = func() {}
	size, err := batch.PeekSize(records)
	if err != nil {
		if len(records) >= 17 && records[16] != 2 {
			return nil, release, fmt.Errorf("%w: magic %d", batch.ErrMagic, int8(records[16]))
		}
		return nil, release, err
	}
	if size != len(records) {
		if size < len(records) {
			return nil, release, fmt.Errorf("%w: a produce request must carry exactly one batch per partition", batch.ErrInvalidRecord)
		}
		return nil, release, batch.ErrShort
	}
	if len(records) > int(cfg.MaxMessageBytes) {
		return nil, release, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, len(records), cfg.MaxMessageBytes)
	}
	limit := decompressedLimit(cfg.MaxMessageBytes, budget)
	if h, err := batch.ParseHeader(records); err == nil && h.Codec() != batch.CodecNone {
		if release, err = budget.acquire(ctx, limit); err != nil {
			return nil, func() {}, err
		}
	}
	raw, err = checkBatch(cfg, records, now, limit)
	if errors.Is(err, batch.ErrDecompressLimit) {
		err = fmt.Errorf("%w: records decompress to more than %d bytes, the limit for this topic's max.message.bytes: %w",
			kerr.MessageTooLarge, limit, err)
	}
	return raw, release, err
}

// checkBatch is prepareBatch past the framing and size checks, with
// limit bounding the decompressed records.
func checkBatch(cfg metadata.Resolved, records []byte, now time.Time, limit int) ([]byte, error) {
	logAppend := cfg.TimestampType == "LogAppendTime"
	opts := batch.ValidateOptions{MaxDecompressed: limit, MinTimestamp: math.MinInt64, MaxTimestamp: math.MaxInt64,
		RequireKeys: cfg.Compact}
	if !logAppend {
		opts.CheckTimestamps = true
		nowMs := now.UnixMilli()
		if cfg.TimestampBeforeMaxMs < nowMs {
			opts.MinTimestamp = nowMs - cfg.TimestampBeforeMaxMs
		}
		if cfg.TimestampAfterMaxMs < math.MaxInt64-nowMs {
			opts.MaxTimestamp = nowMs + cfg.TimestampAfterMaxMs
		}
	}
	info, err := batch.Inspect(records, opts)
	if err != nil {
		return nil, err
	}
	raw := records
	if want, ok := targetCodec(cfg.CompressionType); ok && want != info.Codec() {
		raw, err = batch.Recompress(raw, want, limit)
		if err != nil {
			return nil, err
		}
	}
	if logAppend {
		batch.SetLogAppendTime(raw, now.UnixMilli())
	} else if info.MaxTimestamp != info.Header.MaxTimestamp {
		// Kafka trusts the records, not the header's claim.
		batch.SetMaxTimestamp(raw, info.MaxTimestamp)
	}
	return raw, nil
}

// targetCodec maps compression.type to the codec batches must be stored in;
// ok is false for "producer" (keep what the client sent).
func targetCodec(compressionType string) (batch.Codec, bool) {
	switch compressionType {
	case "uncompressed":
		return batch.CodecNone, true
	case "gzip":
		return batch.CodecGzip, true
	case "snappy":
		return batch.CodecSnappy, true
	case "lz4":
		return batch.CodecLZ4, true
	case "zstd":
		return batch.CodecZstd, true
	}
	return 0, false
}
