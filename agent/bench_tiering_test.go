package agent

// Catch-up reads from the store: a consumer reads a whole partition from
// offset 0 while every record is in the bucket (a real MinIO on loopback)
// and only the tail on disk; side by side with the same read from local
// disk. Numbers and the command are in benchmarks/README.md.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/miniotest"
)

// catchUpBytes is the size of the partition each iteration reads.
const catchUpBytes = 32 << 20

// BenchmarkCatchUpRead reads catchUpBytes from offset 0 per iteration:
//
//	local       every segment on local disk
//	store-cold  every segment in MinIO, the cache smaller than the data (every chunk a GET)
//	store-warm  every segment in MinIO, the cache holding all of it (read once before timing)
func BenchmarkCatchUpRead(b *testing.B) {
	minio := miniotest.Start(b)
	for _, kv := range minio.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	for _, run := range []struct {
		name       string
		remote     bool
		cacheBytes int64
		warm       bool
	}{
		{"local", false, 64 << 20, false},
		{"store-cold", true, 8 << 20, false},
		{"store-warm", true, 256 << 20, true},
	} {
		b.Run(run.name, func(b *testing.B) {
			cfg := testConfig(b.TempDir())
			cfg.Store = minio.StoreURL(minio.NewBucket(b), "bench")
			cfg.Tiering.Interval = 10 * time.Millisecond
			cfg.Tiering.CacheBytes = run.cacheBytes
			cfg.RetentionCheckInterval = 50 * time.Millisecond
			a, err := New(context.Background(), cfg, Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			r := runAgent(b, a)
			cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr().String()), kgo.ProducerBatchCompression(kgo.NoCompression()),
				kgo.DefaultProduceTopic("catchup"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(cl.Close)
			configs := map[string]string{"segment.bytes": "4194304", "retention.ms": "-1"}
			if run.remote {
				configs["local.retention.bytes"] = "0"
			} else {
				configs["remote.storage.enable"] = "false"
			}
			createTopic(b, cl, "catchup", 1, configs)
			records := fill(b, cl, catchUpBytes)
			if run.remote {
				waitLocalTail(b, r, 4<<20)
			}
			if run.warm {
				readAll(b, a, records)
			}
			b.SetBytes(catchUpBytes)
			b.ResetTimer()
			for range b.N {
				readAll(b, a, records)
			}
		})
	}
}

// fill produces about n bytes of 16 KiB records into partition 0 and
// returns how many.
func fill(b *testing.B, cl *kgo.Client, n int) int {
	value := make([]byte, 16<<10)
	records := n / len(value)
	for i := 0; i < records; i += 64 {
		var recs []*kgo.Record
		for j := i; j < min(i+64, records); j++ {
			recs = append(recs, &kgo.Record{Partition: 0, Value: value})
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	return records
}

// waitLocalTail waits until local retention has left at most limit bytes
// on disk (everything else uploaded).
func waitLocalTail(b *testing.B, r *running, limit int64) {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if s := r.tier.Statuses(); len(s) == 1 && s[0].LagSegments == 0 && s[0].LocalBytes <= limit {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("never tiered: %+v", r.tier.Statuses())
}

// readAll consumes partition 0 from offset 0 until it has every record.
func readAll(b *testing.B, a *Agent, records int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr().String()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"catchup": {0: kgo.NewOffset().At(0)}}))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	got := 0
	deadline := time.Now().Add(5 * time.Minute)
	for got < records {
		if time.Now().After(deadline) {
			b.Fatalf("read %d of %d records", got, records)
		}
		fs := cl.PollFetches(context.Background())
		for _, e := range fs.Errors() {
			b.Fatalf("fetch: %v", e.Err)
		}
		got += fs.NumRecords()
	}
}
