package agent

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/topics"
	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/vfs"
	"github.com/strata-streaming/strata/membership"
)

// The coordinators' internal topics (agent/coord), by the short names
// the tests use.
const (
	offsetsTopic = topics.ConsumerOffsets
	txnTopic     = topics.TransactionState
)

// quiet drops agent logs: tests report what they check themselves.
// STRATA_TEST_LOGS=1 shows them, for debugging.
var quiet = func() *slog.Logger {
	if os.Getenv("STRATA_TEST_LOGS") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}()

// testConfig is an agent on loopback ports chosen by the kernel, with its
// data (and store) under dir.
func testConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.DataDir = dir
	cfg.KafkaAddr = "127.0.0.1:0"
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Gossip = membership.LoopbackConfig()
	cfg.DrainTimeout = 0 // tests stop agents to see failures; drain tests ask for it
	return cfg
}

// running is an in-process agent served by Run until stop.
type running struct {
	*Agent
	cancel context.CancelFunc
	done   chan error
}

// start runs an agent and stops it when the test ends.
func start(t *testing.T, cfg Config, fs vfs.FS) *running {
	t.Helper()
	a, err := New(context.Background(), cfg, Options{FS: fs, Logger: quiet})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return runAgent(t, a)
}

// runAgent runs a built agent and stops it when the test ends.
func runAgent(t testing.TB, a *Agent) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Agent: a, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- a.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	// Run serves HTTP and Kafka a moment before it marks the agent ready;
	// tests that check readiness after a request must not race that.
	deadline := time.Now().Add(30 * time.Second)
	for !a.ready.Load() && time.Now().Before(deadline) {
		select {
		case err := <-r.done: // Run ended early: leave its result for stop
			r.done <- err
			return r
		case <-time.After(5 * time.Millisecond):
		}
	}
	return r
}

// stop ends Run and checks that it returned cleanly; a second call is a
// no-op.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s")
	}
}

func (r *running) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// Kafka 3.0's versions name topics in Produce and Fetch (later ones
	// use topic ids), which keeps the raw requests of these tests simple.
	base := []kgo.Opt{kgo.SeedBrokers(r.KafkaAddr().String()), kgo.MaxVersions(kversion.V3_0_0())}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// createTopic creates topic through the Kafka API and fails t on error.
func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32, configs map[string]string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if c := resp.Topics[0].ErrorCode; c != 0 {
		t.Fatalf("create %s: error code %d", topic, c)
	}
	return resp.Topics[0].TopicID
}

// produceRaw sends one record in a Produce request of its own and returns
// the partition's error code and base offset, without client retries. The
// acks are the client's: kgo overwrites a request's Acks with its
// RequiredAcks option.
func produceRaw(t *testing.T, cl *kgo.Client, topic string, partition int32, value string) (int16, int64) {
	t.Helper()
	b := recordBatch(t, value)
	req := kafkawire.Produce(topic, partition, b, -1, 10*time.Second) // kgo sets its own acks
	resp, err := toSeed(t, cl, req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}

// recordBatch encodes one uncompressed record as a v2 batch.
func recordBatch(t *testing.T, value string) []byte {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	b, err := batch.Build(opts, []batch.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fetchValues reads every record of a partition from offset 0 to the high
// watermark and returns their values.
func fetchValues(t *testing.T, cl *kgo.Client, topic string, partition int32) []string {
	t.Helper()
	return fetchValuesFrom(t, cl, topic, partition, 0)
}

// fetchValuesFrom is fetchValues from a given offset.
func fetchValuesFrom(t *testing.T, cl *kgo.Client, topic string, partition int32, offset int64) []string {
	t.Helper()
	var out []string
	for range 100 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, err := toSeed(t, cl, req)
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fp := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if fp.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: error code %d", topic, partition, offset, fp.ErrorCode)
		}
		if offset >= fp.HighWatermark {
			return out
		}
		fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: partition, KeepControlRecords: true}, &fp, kgo.DefaultDecompressor(), nil)
		if fetched.Err != nil {
			t.Fatalf("decode fetch: %v", fetched.Err)
		}
		for _, r := range fetched.Records {
			out = append(out, string(r.Value))
			offset = r.Offset + 1
		}
	}
	t.Fatal("fetch did not reach the high watermark in 100 requests")
	return nil
}

// toSeed sends req to the agent cl was seeded with: kgo sends requests it
// does not route by themselves to any broker it has discovered.
func toSeed(t testing.TB, cl *kgo.Client, req kmsg.Request) (kmsg.Response, error) {
	return cl.SeedBrokers()[0].Request(ctxT(t), req)
}
