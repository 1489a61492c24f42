package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/quota"
	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testwait"
)

// throttleHook records the throttles an agent gives a franz-go client.
type throttleHook struct {
	count atomic.Int64
	most  atomic.Int64 // nanoseconds
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.count.Add(1)
		for {
			old := h.most.Load()
			if int64(d) <= old || h.most.CompareAndSwap(old, int64(d)) {
				return
			}
		}
	}
}

func strp(s string) *string { return &s }

func clientIDEntity(id string) kadm.ClientQuotaEntity {
	return kadm.ClientQuotaEntity{{Type: quota.TypeClientID, Name: strp(id)}}
}

// alterQuotas sets or removes quotas through kadm and fails t on any error.
func alterQuotas(t *testing.T, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) {
	t.Helper()
	res, err := adm.AlterClientQuotas(ctxT(t), entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

// describeAll is every quota an agent describes, as "entity key=value"
// strings.
func describeAll(t *testing.T, adm *kadm.Client) map[string]bool {
	t.Helper()
	got, err := adm.DescribeClientQuotas(ctxT(t), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range got {
		for _, v := range d.Values {
			out[fmt.Sprintf("%s %s=%v", d.Entity, v.Key, v.Value)] = true
		}
	}
	return out
}

// TestClientQuotasAlterDescribe: what AlterClientQuotas sets, Describe
// returns and the agent enforces; validate_only changes nothing; removal
// deletes the entity and lifts the throttle; bad requests answer
// INVALID_REQUEST, as Kafka's do.
func TestClientQuotasAlterDescribe(t *testing.T) {
	r := start(t, testConfig(t.TempDir()), nil)
	cl := r.client(t)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "quoted", 1, nil)

	slow := kadm.AlterClientQuotaEntry{Entity: clientIDEntity("slow"),
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 1024}}}
	alice := kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: quota.TypeUser, Name: strp("alice")}, {Type: quota.TypeClientID}},
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.ConsumerByteRate, Value: 2048}, {Key: quota.RequestPercentage, Value: 12.5}}}

	// validate_only: accepted, nothing stored.
	res, err := adm.ValidateAlterClientQuotas(ctxT(t), []kadm.AlterClientQuotaEntry{slow, alice})
	if err != nil || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("validate only: %v %+v", err, res)
	}
	if got := describeAll(t, adm); len(got) != 0 {
		t.Fatalf("validate only stored %v", got)
	}

	alterQuotas(t, adm, slow, alice)
	want := map[string]bool{
		"{client-id=slow} producer_byte_rate=1024":                  true,
		"{client-id=<default>, user=alice} consumer_byte_rate=2048": true,
		"{client-id=<default>, user=alice} request_percentage=12.5": true,
	}
	if got := describeAll(t, adm); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("described %v, want %v", got, want)
	}
	// A strict filter of the default client id finds only alice's entity
	// when it names her user too.
	got, err := adm.DescribeClientQuotas(ctxT(t), true, []kadm.DescribeClientQuotaComponent{
		{Type: quota.TypeUser, MatchName: strp("alice")}, {Type: quota.TypeClientID, MatchType: 1}})
	if err != nil || len(got) != 1 || len(got[0].Values) != 2 {
		t.Fatalf("strict describe: %v %+v", err, got)
	}

	// The quota throttles: 2 KiB at 1 KiB/s earns about two seconds.
	if d := produceThrottle(t, r, "slow", 2048); d < time.Second || d > 3*time.Second {
		t.Fatalf("throttle at 1 KiB/s after 2 KiB: %v, want about 2s", d)
	}
	// Another client id is not throttled.
	if d := produceThrottle(t, r, "fast", 2048); d != 0 {
		t.Fatalf("a client without a quota was throttled %v", d)
	}

	// Removal lifts it and deletes the entity once its last key goes.
	slow.Ops = []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Remove: true}}
	alterQuotas(t, adm, slow)
	if d := produceThrottle(t, r, "slow", 2048); d != 0 {
		t.Fatalf("throttled %v after the quota was removed", d)
	}
	delete(want, "{client-id=slow} producer_byte_rate=1024")
	if got := describeAll(t, adm); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after removal described %v, want %v", got, want)
	}

	// Kafka's refusals: an unknown key, an unknown entity type, a byte
	// rate that is not whole, ip with user.
	bad := []kadm.AlterClientQuotaEntry{
		{Entity: clientIDEntity("x"), Ops: []kadm.AlterClientQuotaOp{{Key: "bogus_rate", Value: 1}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "group", Name: strp("g")}}, Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 1}}},
		{Entity: clientIDEntity("x"), Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 1.5}}},
		{Entity: kadm.ClientQuotaEntity{{Type: quota.TypeIP, Name: strp("127.0.0.1")}, {Type: quota.TypeUser}}, Ops: []kadm.AlterClientQuotaOp{{Key: quota.ConnectionCreationRate, Value: 1}}},
	}
	res, err = adm.AlterClientQuotas(ctxT(t), bad)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !errors.Is(r.Err, kerr.InvalidRequest) {
			t.Errorf("bad entry %d (%v): %v, want INVALID_REQUEST", i, r.Entity, r.Err)
		}
	}
	if _, err := adm.DescribeClientQuotas(ctxT(t), false, []kadm.DescribeClientQuotaComponent{{Type: "group", MatchType: 2}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Errorf("describe of an unknown entity type: %v, want INVALID_REQUEST", err)
	}
	if got := describeAll(t, adm); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("refused entries changed the quotas: %v", got)
	}
}

// produceThrottle produces one record of size bytes as clientID, from a
// fresh client (so no throttle of an earlier one delays it), and returns
// the longest throttle the agent gave. Uncompressed: the quota meters
// the bytes on the wire.
func produceThrottle(t *testing.T, r *running, clientID string, size int) time.Duration {
	t.Helper()
	var hook throttleHook
	cl := r.client(t, kgo.ClientID(clientID), kgo.WithHooks(&hook), kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: "quoted", Value: make([]byte, size)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return time.Duration(hook.most.Load())
}

// TestClientQuotasReachEveryAgent: a quota set through one agent of three
// is described by the others within seconds, by gossip: the reconcile
// loop's own re-read is far too slow to account for it.
func TestClientQuotasReachEveryAgent(t *testing.T) {
	c := startClusterWith(t, 3, func(cfg *Config) { cfg.ReconcileInterval = time.Minute })
	adm := kadm.NewClient(c.agents[0].client(t))
	alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: quota.TypeUser}},
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 4096}}})
	const want = "{user=<default>} producer_byte_rate=4096"
	for i, a := range c.agents[1:] {
		other := kadm.NewClient(a.client(t))
		testwait.Until(t, 10*time.Second, func() bool { return describeAll(t, other)[want] }, "agent %d to describe %s", i+1, want)
	}
}

// quotaRunTime is how long the rate tests produce or consume: long
// enough that one request's bytes are a small part of the total.
const quotaRunTime = 9 * time.Second

// checkRate fails t unless bytes over elapsed is within 10% of limit.
func checkRate(t *testing.T, what string, bytes int64, elapsed time.Duration, limit float64) {
	t.Helper()
	rate := float64(bytes) / elapsed.Seconds()
	t.Logf("%s: %d bytes in %v = %.0f B/s, %.3f × the quota of %.0f B/s", what, bytes, elapsed.Round(time.Millisecond), rate, rate/limit, limit)
	if rate < 0.9*limit || rate > 1.1*limit {
		t.Errorf("%s at %.0f B/s, want %.0f ± 10%%", what, rate, limit)
	}
}

// TestProducerByteRateThrottles: a producer writing as fast as it can
// under producer_byte_rate=1 MiB/s is held to it within 10%, averaged
// over the run, and franz-go sees throttle_time_ms.
func TestProducerByteRateThrottles(t *testing.T) {
	const limit = 1 << 20
	r := start(t, testConfig(t.TempDir()), nil)
	cl := r.client(t)
	createTopic(t, cl, "quoted", 1, nil)
	alterQuotas(t, kadm.NewClient(cl), kadm.AlterClientQuotaEntry{Entity: clientIDEntity("producer"),
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: limit}}})

	var hook throttleHook
	// Small batches, several in flight: one request is a small part of
	// a second's bytes, so where the run ends barely moves the average.
	// Uncompressed, so that the values acked are the bytes metered.
	prod := r.client(t, kgo.ClientID("producer"), kgo.WithHooks(&hook), kgo.DefaultProduceTopic("quoted"),
		kgo.ProducerBatchMaxBytes(32<<10), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(512),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var acked atomic.Int64
	value := make([]byte, 1000)
	begin := time.Now()
	for time.Since(begin) < quotaRunTime {
		prod.Produce(ctx, &kgo.Record{Value: value}, func(rec *kgo.Record, err error) {
			if err == nil {
				acked.Add(int64(len(rec.Value)))
			}
		})
	}
	bytes, elapsed := acked.Load(), time.Since(begin)
	cancel()
	checkRate(t, "producer", bytes, elapsed, limit)
	if hook.count.Load() == 0 {
		t.Error("the producer never saw throttle_time_ms")
	}
	t.Logf("throttled responses: %d, longest %v", hook.count.Load(), time.Duration(hook.most.Load()))
	fams, err := metricstext.Scrape(ctxT(t), "http://"+r.HTTPAddr().String()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"strata_kafka_quota_throttled_total", "strata_kafka_quota_throttle_seconds_total"} {
		if v, _ := fams.Value(name, "quota", quota.ProducerByteRate); v <= 0 {
			t.Errorf("%s{quota=%q} = %v after a throttled run", name, quota.ProducerByteRate, v)
		}
	}
}

// TestConsumerByteRateThrottles: a consumer reading a backlog under
// consumer_byte_rate=1 MiB/s is held to it within 10%, and sees
// throttle_time_ms.
func TestConsumerByteRateThrottles(t *testing.T) {
	const limit = 1 << 20
	r := start(t, testConfig(t.TempDir()), nil)
	cl := r.client(t, kgo.ProducerBatchCompression(kgo.NoCompression()))
	createTopic(t, cl, "quoted", 1, nil)
	// A backlog the consumer cannot finish within the run.
	backlog := int(1.5 * limit * quotaRunTime.Seconds())
	value := make([]byte, 16<<10)
	var wg sync.WaitGroup
	for range backlog / len(value) {
		wg.Add(1)
		cl.Produce(ctxT(t), &kgo.Record{Topic: "quoted", Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	alterQuotas(t, kadm.NewClient(cl), kadm.AlterClientQuotaEntry{Entity: clientIDEntity("consumer"),
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.ConsumerByteRate, Value: limit}}})

	var hook throttleHook
	cons := r.client(t, kgo.ClientID("consumer"), kgo.WithHooks(&hook), kgo.ConsumeTopics("quoted"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(128<<10), kgo.FetchMaxPartitionBytes(128<<10))
	var got int64
	begin := time.Now()
	for time.Since(begin) < quotaRunTime {
		ctx, cancel := context.WithDeadline(context.Background(), begin.Add(quotaRunTime))
		fetches := cons.PollFetches(ctx)
		cancel()
		fetches.EachRecord(func(rec *kgo.Record) { got += int64(len(rec.Value)) })
	}
	checkRate(t, "consumer", got, time.Since(begin), limit)
	if hook.count.Load() == 0 {
		t.Error("the consumer never saw throttle_time_ms")
	}
}

// TestThrottledConnectionIsMuted: a client that ignores throttle_time_ms
// is held all the same, as Kafka mutes its channel: after a Produce that
// earns a throttle, the agent does not read the connection's next
// request until the throttle has passed.
func TestThrottledConnectionIsMuted(t *testing.T) {
	r := start(t, testConfig(t.TempDir()), nil)
	cl := r.client(t)
	createTopic(t, cl, "quoted", 1, nil)
	alterQuotas(t, kadm.NewClient(cl), kadm.AlterClientQuotaEntry{Entity: clientIDEntity("deaf"),
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.ProducerByteRate, Value: 1024}}})

	cfg := kafkawire.DefaultConfig()
	cfg.ClientID = "deaf"
	conn, err := kafkawire.Dial(ctxT(t), r.KafkaAddr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kafkawire.Produce("quoted", 0, recordBatch(t, string(make([]byte, 2048))), 1, 10*time.Second)
	req.Version = 9
	resp, err := conn.Do(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	answered := time.Now()
	pr := resp.(*kmsg.ProduceResponse)
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	throttle := time.Duration(pr.ThrottleMillis) * time.Millisecond
	if throttle < time.Second {
		t.Fatalf("throttle_time_ms %d after 2 KiB at 1 KiB/s, want about 2000", pr.ThrottleMillis)
	}
	// The next request, sent at once, is answered only after the throttle.
	if _, err := conn.Do(ctxT(t), kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(answered); waited < throttle-50*time.Millisecond {
		t.Fatalf("the next request was answered %v after a throttle of %v: the connection was not muted", waited, throttle)
	}
}

// TestConnectionCreationRateQuota: past an address's
// connection_creation_rate, new connections from it are closed at once;
// others still get in.
func TestConnectionCreationRateQuota(t *testing.T) {
	r := start(t, testConfig(t.TempDir()), nil)
	adm := kadm.NewClient(r.client(t))
	alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: quota.TypeIP, Name: strp("127.0.0.1")}},
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.ConnectionCreationRate, Value: 1}}})
	served := 0
	for range 5 {
		conn, err := kafkawire.Dial(ctxT(t), r.KafkaAddr().String(), kafkawire.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Do(ctxT(t), kmsg.NewPtrApiVersionsRequest()); err == nil {
			served++
		}
		conn.Close()
	}
	// At 1/s with bursts of one second's worth, five connections in a
	// row from one address get one or two served (two if a second passed).
	if served < 1 || served > 2 {
		t.Fatalf("%d of 5 connections at once served under connection_creation_rate=1, want 1 or 2", served)
	}
}

// TestRequestPercentageQuota: request_percentage meters the time spent
// handling requests: any request of a client over a tiny quota is
// throttled, another client's is not, and a Fetch's long-poll wait does
// not count as handling (Kafka counts it neither).
func TestRequestPercentageQuota(t *testing.T) {
	r := start(t, testConfig(t.TempDir()), nil)
	cl := r.client(t)
	createTopic(t, cl, "idle", 1, nil)
	adm := kadm.NewClient(cl)
	alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: clientIDEntity("busy"),
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.RequestPercentage, Value: 0.01}}})
	alterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: clientIDEntity("poller"),
		Ops: []kadm.AlterClientQuotaOp{{Key: quota.RequestPercentage, Value: 10}}})

	dial := func(clientID string) *kafkawire.Conn {
		cfg := kafkawire.DefaultConfig()
		cfg.ClientID = clientID
		conn, err := kafkawire.Dial(ctxT(t), r.KafkaAddr().String(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	metadata := func(conn *kafkawire.Conn) int32 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		resp, err := conn.Do(ctxT(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.MetadataResponse).ThrottleMillis
	}
	// 0.01% is 0.1 ms of handling per second: a Metadata request takes
	// more than 1 µs, which alone earns 10 ms.
	if ms := metadata(dial("busy")); ms < 10 {
		t.Errorf("Metadata under request_percentage=0.01: throttle_time_ms %d, want at least 10", ms)
	}
	if ms := metadata(dial("other")); ms != 0 {
		t.Errorf("Metadata of a client without a quota: throttle_time_ms %d", ms)
	}

	// A fetch that long-polls 2 s on an empty partition: counted, the
	// wait alone would earn 20 s of throttle at 10%, cut to the 1 s bound;
	// the work alone, well under 50 ms, earns under 500 ms.
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.SessionEpoch, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, -1, -1, 2000, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "idle"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	begin := time.Now()
	resp, err := dial("poller").Do(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(begin); waited < time.Second {
		t.Fatalf("the fetch did not long-poll (answered after %v)", waited)
	}
	if ms := resp.(*kmsg.FetchResponse).ThrottleMillis; ms >= 500 {
		t.Errorf("a long-polling fetch under request_percentage=10 was throttled %d ms: its wait was counted", ms)
	}
}
