package abuse

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testagent"
)

// maxBombRSS bounds the agent's peak RSS while 32 decompression bombs
// arrive at once. The agent may hold what --produce-decompression-max-bytes
// lets it (256 MiB by default: 8 batches growing buffers towards their
// 16 MiB limit), a resting agent of about 25 MiB, the 32 requests'
// compressed bytes (up to 32 MiB) and garbage the collector has not yet
// taken; the 250 MiB each bomb claims (8 GiB in all) it must never hold.
// Measured peaks are 360-460 MiB; before the bound, 4 gzip bombs took
// 2.4 GiB.
const maxBombRSS = 768 << 20

// bombSizes are the decompressed sizes of the bombs, each the most that
// compresses under the default max.message.bytes (1 MiB) in its codec:
// snappy compresses zeros only about 21:1.
var bombSizes = map[batch.Codec]int{
	batch.CodecGzip:   250 << 20,
	batch.CodecSnappy: 19 << 20,
	batch.CodecLZ4:    200 << 20,
	batch.CodecZstd:   250 << 20,
}

// TestDecompressionBombs sends 1, then 32 concurrent, compressed batches
// that each decompress to far more than their topic allows, per codec, to a
// fresh agent; each must be refused with MESSAGE_TOO_LARGE, the agent's
// peak RSS must stay under maxBombRSS, and it must still serve a produce
// and a consume afterwards.
func TestDecompressionBombs(t *testing.T) {
	for _, c := range []batch.Codec{batch.CodecGzip, batch.CodecSnappy, batch.CodecLZ4, batch.CodecZstd} {
		t.Run(c.String(), func(t *testing.T) {
			a := testagent.Start(t, testagent.Options{})
			const topic = "bombs"
			createTopic(t, a.Addr(), topic)
			opts := batch.DefaultBuildOptions()
			opts.Codec, opts.BaseTimestamp = c, time.Now().UnixMilli()
			raw, err := batch.Build(opts, []batch.Record{{Value: make([]byte, bombSizes[c])}})
			if err != nil {
				t.Fatal(err)
			}
			base := mustSample(t, a.PID(), a.HTTPAddr())
			t.Logf("%v: resting %v", c, base)
			for _, n := range []int{1, 32} {
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for range n {
					wg.Go(func() { errs <- sendBomb(a.Addr(), topic, raw) })
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatalf("%v x%d: %v", c, n, err)
					}
				}
				s := mustSample(t, a.PID(), a.HTTPAddr())
				t.Logf("%v x%d: %d bytes sent (each claims %s), peak RSS %s; now %v",
					c, n, n*len(raw), mib(int64(bombSizes[c])), mib(s.hwm), s)
				if s.hwm > maxBombRSS {
					t.Errorf("%v x%d: peak RSS %s, over %s", c, n, mib(s.hwm), mib(maxBombRSS))
				}
			}
			produceAndConsume(t, a.Addr(), topic)
		})
	}
}

// sendBomb sends raw to partition 0 of topic on a connection of its own and
// checks that it is refused as too large once decompressed.
func sendBomb(addr, topic string, raw []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := kafkawire.Dial(ctx, addr, kafkawire.DefaultConfig())
	if err != nil {
		return err
	}
	defer conn.Close()
	req := kafkawire.Produce(topic, 0, raw, -1, 30*time.Second)
	req.SetVersion(9)
	resp, err := conn.Do(ctx, req)
	if err != nil {
		return err
	}
	got := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if got.ErrorCode != kerr.MessageTooLarge.Code {
		return fmt.Errorf("bomb of %d bytes answered %v, want MESSAGE_TOO_LARGE", len(raw), kerr.ErrorForCode(got.ErrorCode))
	}
	return nil
}

// createTopic creates topic with one partition.
func createTopic(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	create.Topics = append(create.Topics, ct)
	resp, err := create.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// produceAndConsume checks that the agent still takes a record and hands
// it back, and that no bomb reached the log: the record is at offset 0.
func produceAndConsume(t *testing.T, addr, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.GzipCompression()),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after the bombs")}).First()
	if err != nil {
		t.Fatalf("produce after the bombs: %v", err)
	}
	if r.Offset != 0 {
		t.Fatalf("produce after the bombs: offset %d, want 0: a bomb reached the log", r.Offset)
	}
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				t.Fatalf("fetch: %v", err)
			}
		})
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != "after the bombs" || recs[0].Offset != 0 {
				t.Fatalf("read back %q at %d", recs[0].Value, recs[0].Offset)
			}
			return
		}
	}
	t.Fatal("the record produced after the bombs was not read back within 30s")
}
