package agent

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/kafkawire"
)

// bombBatch is one batch of a single record of n zero bytes compressed
// with c: a few KiB that claim n bytes once decompressed.
func bombBatch(t testing.TB, c batch.Codec, n int) []byte {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.Codec = c
	opts.BaseTimestamp = time.Now().UnixMilli()
	raw, err := batch.Build(opts, []batch.Record{{Value: make([]byte, n)}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// produceBomb sends raw as partition 0 of topic in a Produce v9 and returns
// that partition's answer.
func produceBomb(t testing.TB, addr, topic string, raw []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	conn, err := kafkawire.Dial(ctxT(t), addr, kafkawire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kafkawire.Produce(topic, 0, raw, -1, 10*time.Second)
	req.SetVersion(9)
	resp, err := conn.Do(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// A compressed batch under max.message.bytes whose record decompresses
// past the topic's limit (16 × max.message.bytes) is refused with
// MESSAGE_TOO_LARGE for every codec, and nothing reaches the log.
func TestProduceDecompressionBomb(t *testing.T) {
	a := start(t, testConfig(t.TempDir()), nil)
	cl := a.client(t)
	const maxMessageBytes = 4 << 20 // snappy compresses zeros only ~21:1
	createTopic(t, cl, "bombs", 1, map[string]string{"max.message.bytes": "4194304"})
	for _, c := range []batch.Codec{batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		raw := bombBatch(t, c, 16*maxMessageBytes+1)
		if len(raw) > maxMessageBytes {
			t.Fatalf("%v bomb is %d bytes, over max.message.bytes: it would be refused for that", c, len(raw))
		}
		rp := produceBomb(t, a.KafkaAddr().String(), "bombs", raw)
		if rp.ErrorCode != kerr.MessageTooLarge.Code || rp.ErrorMessage == nil || !strings.Contains(*rp.ErrorMessage, "decompress") {
			t.Fatalf("%v bomb of %d bytes: error %v %v, want MESSAGE_TOO_LARGE for decompressing too much",
				c, len(raw), kerr.ErrorForCode(rp.ErrorCode), derefOr(rp.ErrorMessage))
		}
		t.Logf("%v: %d bytes sent, refused: %s", c, len(raw), *rp.ErrorMessage)
	}
	// Nothing was appended: the next record gets offset 0.
	res := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "bombs", Value: []byte("after")})
	if r, err := res.First(); err != nil || r.Offset != 0 {
		t.Fatalf("produce after the bombs: offset %v, %v; want offset 0", r, err)
	}
}

func derefOr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// A record just under the limit is accepted and a franz-go consumer reads
// it back whole.
func TestProduceNearDecompressionLimit(t *testing.T) {
	a := start(t, testConfig(t.TempDir()), nil)
	const limit = 16 << 20 // the default max.message.bytes is 1 MiB; the floor applies
	cl := a.client(t, kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerBatchMaxBytes(limit),
		kgo.ConsumeTopics("near"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	createTopic(t, cl, "near", 1, nil)
	value := make([]byte, limit-4<<10) // the record framing and key fit in the rest
	for i := range value {
		value[i] = byte(i % 251)
	}
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "near", Value: value}).FirstErr(); err != nil {
		t.Fatalf("produce %d bytes: %v", len(value), err)
	}
	ctx := ctxT(t)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("no record read back: %v", err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		if recs := fs.Records(); len(recs) > 0 {
			if got := recs[0].Value; len(got) != len(value) || got[len(got)-1] != value[len(value)-1] {
				t.Fatalf("read back %d bytes, want %d", len(got), len(value))
			}
			// The consumer (and the agent serving it, in this process)
			// allocate a few times the record, not without bound.
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("consuming the %d-byte record allocated %d bytes", len(value), alloc)
			if alloc > 8*limit {
				t.Fatalf("consuming the %d-byte record allocated %d bytes", len(value), alloc)
			}
			return
		}
	}
}
