package agent

// Benchmarks through the Kafka wire: an in-process agent on loopback, driven
// by franz-go. Numbers and the command that produced them are in
// benchmarks/README.md.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/partition"
)

// benchAgent starts an agent with one single-partition topic.
func benchAgent(b *testing.B) (*running, *kgo.Client) {
	b.Helper()
	a, err := New(context.Background(), testConfig(b.TempDir()), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Agent: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-r.done })
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr().String()), kgo.MaxVersions(kversion.V3_0_0()),
		kgo.ProducerLinger(0), kgo.DefaultProduceTopic("bench"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Close)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "bench", 1, 1
	req.Topics = append(req.Topics, rt)
	if resp, err := req.RequestWith(context.Background(), cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		b.Fatalf("create topic: %v", err)
	}
	return r, cl
}

// BenchmarkProduceAcksAll: one record of the given size per synchronous
// idempotent produce, acks=all, log.flush=always; serial and with 16
// concurrent producers sharing the client (group commit).
func BenchmarkProduceAcksAll(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		for _, parallel := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB", size>>10)
			if parallel {
				name += "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				_, cl := benchAgent(b)
				value := []byte(strings.Repeat("x", size))
				ctx := context.Background()
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				if !parallel {
					for range b.N {
						if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkFetch: 1 MiB fetches through the wire from a partition holding
// 64 MiB of 16 KiB batches (page cache warm), wrapping around at the end.
func BenchmarkFetch(b *testing.B) {
	r, cl := benchAgent(b)
	const batchBytes, total = 16 << 10, 64 << 20
	p := localPartition(r, "bench", 0)
	raw, err := batch.Build(batch.DefaultBuildOptions(), []batch.Record{{Value: make([]byte, batchBytes)}})
	if err != nil {
		b.Fatal(err)
	}
	for range total / batchBytes {
		if _, err := p.AppendAndWait(context.Background(), append([]byte(nil), raw...), -1); err != nil {
			b.Fatal(err)
		}
	}
	end := p.HighWatermark()
	var offset int64
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "bench"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			b.Fatal(err)
		}
		fp := resp.Topics[0].Partitions[0]
		if fp.ErrorCode != 0 || len(fp.RecordBatches) == 0 {
			b.Fatalf("fetch at %d: code %d, %d bytes", offset, fp.ErrorCode, len(fp.RecordBatches))
		}
		next := offset + int64(len(fp.RecordBatches)/len(raw))
		if next >= end {
			next = 0
		}
		offset = next
	}
}

// BenchmarkClosePartitions: closing 1,000 partition logs that each took
// one write since their last fsync (a stopping agent's last step: an
// fsync and a clean-shutdown mark per log), one at a time and
// closeParallelism at a time. Each iteration is a fresh agent; only the
// closes are timed.
func BenchmarkClosePartitions(b *testing.B) {
	const partitions = 1000
	for _, workers := range []int{1, closeParallelism} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				cfg := testConfig(b.TempDir())
				cfg.LogFlush = "interval" // the writes wait for the close's fsync
				a, err := New(context.Background(), cfg, Options{Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				r := runAgent(b, a)
				cl := r.client(b)
				createTopic(b, cl, "close", partitions, nil)
				raw, err := batch.Build(batch.DefaultBuildOptions(), []batch.Record{{Value: []byte("v")}})
				if err != nil {
					b.Fatal(err)
				}
				parts := localPartitionsOf(r, "close")
				for _, p := range parts {
					if _, err := p.AppendAndWait(context.Background(), append([]byte(nil), raw...), -1); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := partition.CloseAll(parts, workers); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				r.stop(b)
			}
		})
	}
}

// BenchmarkCreateTopic: CreateTopics of one topic of 1,000 partitions at
// RF 1 on a fresh agent, as a client sees it (issue 33, item 3): every
// partition's state read, log created and fsynced. Each iteration is a
// fresh agent; only the request is timed.
func BenchmarkCreateTopic(b *testing.B) {
	const partitions = 1000
	for range b.N {
		b.StopTimer()
		a, err := New(context.Background(), testConfig(b.TempDir()), Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		r := runAgent(b, a)
		cl := r.client(b)
		b.StartTimer()
		createTopic(b, cl, "created", partitions, nil)
		b.StopTimer()
		r.stop(b)
	}
}
