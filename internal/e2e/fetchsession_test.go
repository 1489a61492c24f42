package e2e

// Fetch sessions (KIP-227) seen from real clients: kafka-go's sessionless
// Client.Fetch, franz-go consumers that keep incremental sessions while
// partitions come and go, and eviction from a cache of one slot.

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestKafkaGoClientFetch: kafka-go's Client.Fetch sends Fetch v11 with
// SessionID -1 and SessionEpoch -1, which Kafka serves as a sessionless
// full fetch.
func TestKafkaGoClientFetch(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	const topic, n = "kafkago-client-fetch", 20
	createTopic(t, newAdmin(t, a.Addr()), topic, 1, nil)
	producer := newKgo(t, a.Addr())
	for i := range n {
		if err := producer.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	transport := &kafka.Transport{MetadataTTL: time.Second}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(a.Addr()), Transport: transport, Timeout: opTimeout}
	next := int64(0)
	for next < n {
		res, err := client.Fetch(ctxT(t, opTimeout), &kafka.FetchRequest{Topic: topic, Partition: 0, Offset: next, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Second})
		if err != nil {
			t.Fatalf("Fetch at %d: %v", next, err)
		}
		if res.Error != nil {
			t.Fatalf("Fetch at %d: %v", next, res.Error)
		}
		if res.HighWatermark != n {
			t.Fatalf("high watermark %d, want %d", res.HighWatermark, n)
		}
		for {
			m, err := res.Records.ReadRecord()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("read record: %v", err)
			}
			if m.Offset < next {
				continue
			}
			if m.Offset != next {
				t.Fatalf("record at offset %d, want %d", m.Offset, next)
			}
			v, _ := io.ReadAll(m.Value)
			if string(v) != strconv.Itoa(int(next)) {
				t.Fatalf("offset %d holds %q", next, v)
			}
			next++
		}
	}
}

// sessionConsumer checks that a consumer reads each partition's records
// exactly once and in order: it produced wrote "<partition>/<offset>".
type sessionConsumer struct {
	t    *testing.T
	cl   *kgo.Client
	next map[int32]int64 // next offset expected, per partition consumed
}

// pollUntil polls until every partition in want has been read up to
// (excluding) its offset, checking each record.
func (c *sessionConsumer) pollUntil(want map[int32]int64) {
	c.t.Helper()
	ctx := ctxT(c.t, opTimeout)
	for {
		done := true
		for p, end := range want {
			if c.next[p] < end {
				done = false
			}
		}
		if done {
			return
		}
		fs := c.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("records not read within %v: read up to %v, want %v", opTimeout, c.next, want)
		}
		fs.EachError(func(topic string, p int32, err error) { c.t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			next, ok := c.next[r.Partition]
			if !ok {
				return // a partition no longer consumed
			}
			if r.Offset != next {
				c.t.Fatalf("partition %d: record at offset %d, want %d (lost or duplicated)", r.Partition, r.Offset, next)
			}
			if string(r.Value) != fmt.Sprintf("%d/%d", r.Partition, r.Offset) {
				c.t.Fatalf("partition %d offset %d holds %q", r.Partition, r.Offset, r.Value)
			}
			c.next[r.Partition] = next + 1
		})
	}
}

// sessionProducer writes records "<partition>/<offset>" and knows each
// partition's end.
type sessionProducer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	ends  map[int32]int64
}

func (p *sessionProducer) produce(partition int32, n int) {
	p.t.Helper()
	for range n {
		r := &kgo.Record{Topic: p.topic, Partition: partition, Value: []byte(fmt.Sprintf("%d/%d", partition, p.ends[partition]))}
		if err := p.cl.ProduceSync(ctxT(p.t, opTimeout), r).FirstErr(); err != nil {
			p.t.Fatalf("produce to %d: %v", partition, err)
		}
		p.ends[partition]++
	}
}

// ends is the produced ends of the partitions c consumes.
func (p *sessionProducer) endsOf(c *sessionConsumer) map[int32]int64 {
	out := map[int32]int64{}
	for q := range c.next {
		out[q] = p.ends[q]
	}
	return out
}

func newSessionProducer(t *testing.T, addr, topic string) *sessionProducer {
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return &sessionProducer{t: t, cl: cl, topic: topic, ends: map[int32]int64{}}
}

func newSessionConsumer(t *testing.T, addr, topic string, partitions []int32, opts ...kgo.Opt) *sessionConsumer {
	offsets := map[int32]kgo.Offset{}
	next := map[int32]int64{}
	for _, p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
		next[p] = 0
	}
	opts = append([]kgo.Opt{kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)
	cl := newKgo(t, addr, opts...)
	return &sessionConsumer{t: t, cl: cl, next: next}
}

// TestFetchSessionsFranz: a franz-go consumer keeps an incremental
// session over many polls (the agent counts incremental fetches) while its
// partitions change: added ones reopen the session (franz-go restarts it
// with epoch 0 and the old id), a paused partition is forgotten by an
// incremental fetch and comes back when resumed, and a removed one goes.
// It reads every record exactly once.
func TestFetchSessionsFranz(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	a := testagent.Start(t, testagent.Options{})
	const topic = "fetch-sessions"
	createTopic(t, newAdmin(t, a.Addr()), topic, 4, nil)
	prod := newSessionProducer(t, a.Addr(), topic)
	// One batch per partition and fetch: draining a backlog takes
	// fetches that return records without a new HW.
	cons := newSessionConsumer(t, a.Addr(), topic, []int32{0, 1}, kgo.FetchMaxPartitionBytes(100))
	metric := func(name string, labels ...string) float64 { return metricValue(t, a.HTTPAddr(), name, labels...) }
	sessionPartitions := func(want float64) {
		t.Helper()
		waitFor(t, "session partitions", func() string {
			if got := metric("strata_kafka_fetch_session_partitions"); got != want {
				return fmt.Sprintf("strata_kafka_fetch_session_partitions %v, want %v", got, want)
			}
			if got := metric("strata_kafka_fetch_sessions"); got != 1 {
				return fmt.Sprintf("strata_kafka_fetch_sessions %v, want the consumer's 1", got)
			}
			return ""
		})
	}
	const rounds = 32
	var paused int64 // partition 0's end when it was paused
	for round := range rounds {
		switch round {
		case 8:
			cons.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {2: kgo.NewOffset().AtStart(), 3: kgo.NewOffset().AtStart()}})
			cons.next[2], cons.next[3] = 0, 0
		case 16:
			cons.cl.PauseFetchPartitions(map[string][]int32{topic: {0}})
			paused = cons.next[0]
			delete(cons.next, 0)
		case 22:
			cons.next[0] = paused
			cons.cl.ResumeFetchPartitions(map[string][]int32{topic: {0}})
		case 28:
			cons.cl.RemoveConsumePartitions(map[string][]int32{topic: {1}})
			delete(cons.next, 1)
		}
		// A few records on one or two partitions a round: most of the
		// session's partitions have nothing new.
		for range 1 + rng.IntN(2) {
			prod.produce(int32(rng.IntN(4)), 1+rng.IntN(3))
		}
		cons.pollUntil(prod.endsOf(cons))
		switch round {
		case 0:
			sessionPartitions(2)
		case 8:
			sessionPartitions(4)
		case 16:
			sessionPartitions(3) // partition 0 forgotten
		case 22:
			sessionPartitions(4)
		case 28:
			sessionPartitions(3)
		}
	}
	if got := metric("strata_kafka_fetch_requests_total", "session", "incremental"); got < rounds {
		t.Fatalf("%v incremental fetches over %d rounds: the consumer did not keep a session", got, rounds)
	}
	if got := metric("strata_kafka_fetch_requests_total", "session", "error"); got > 0 {
		t.Fatalf("%v fetches answered with a session error", got)
	}
	// Records are not sent again and again either (the client would drop
	// the repeats): the session reads from the offsets the consumer sends.
	in, out := metric("strata_topic_bytes_in_total", "topic", topic), metric("strata_topic_bytes_out_total", "topic", topic)
	if out > 2*in {
		t.Fatalf("%v record bytes served for %v written", out, in)
	}
	t.Logf("%v record bytes served for %v written", out, in)
}

// TestFetchSessionEvictionFranz: with one slot, a consumer of more
// partitions evicts an older session once that is older than the eviction
// age; the evicted consumer is told FETCH_SESSION_ID_NOT_FOUND, carries on
// without a session, and neither loses nor repeats a record.
func TestFetchSessionEvictionFranz(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{
		"--max-incremental-fetch-session-cache-slots=1", "--min-incremental-fetch-session-eviction=300ms",
	}})
	const topic = "fetch-session-eviction"
	createTopic(t, newAdmin(t, a.Addr()), topic, 4, nil)
	metric := func(name string, labels ...string) float64 { return metricValue(t, a.HTTPAddr(), name, labels...) }
	prod := newSessionProducer(t, a.Addr(), topic)
	for p := range int32(4) {
		prod.produce(p, 3)
	}
	small := newSessionConsumer(t, a.Addr(), topic, []int32{0, 1})
	small.pollUntil(prod.endsOf(small))
	// Each idle poll of the small consumer's session waits its 100 ms, so
	// after 6 incremental ones the session is older than the 300 ms age.
	waitFor(t, "the small consumer's session to age", func() string {
		if got := metric("strata_kafka_fetch_requests_total", "session", "incremental"); got < 6 {
			return fmt.Sprintf("%v incremental fetches", got)
		}
		return ""
	})
	big := newSessionConsumer(t, a.Addr(), topic, []int32{0, 1, 2, 3})
	big.pollUntil(prod.endsOf(big))
	waitFor(t, "an eviction", func() string {
		if got := metric("strata_kafka_fetch_session_evictions_total"); got < 1 {
			return fmt.Sprintf("strata_kafka_fetch_session_evictions_total %v", got)
		}
		if got := metric("strata_kafka_fetch_requests_total", "session", "error"); got < 1 {
			return "the evicted consumer was not told its session was gone"
		}
		return ""
	})
	// Both go on reading, exactly once, whichever holds the slot.
	for round := range 10 {
		prod.produce(int32(round%4), 2)
		small.pollUntil(prod.endsOf(small))
		big.pollUntil(prod.endsOf(big))
	}
	if got := metric("strata_kafka_fetch_sessions"); got != 1 {
		t.Fatalf("strata_kafka_fetch_sessions %v with one slot", got)
	}
}

// fetchBytes counts the bytes of Fetch requests and responses a client
// sends and reads.
type fetchBytes struct {
	mu                    sync.Mutex
	fetches, sent, gotten int64
}

func (f *fetchBytes) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e kgo.BrokerE2E) {
	if key != 1 || e.Err() != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches++
	f.sent += int64(e.BytesWritten)
	f.gotten += int64(e.BytesRead)
}

func (f *fetchBytes) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches, f.sent, f.gotten = 0, 0, 0
}

// BenchmarkFetchSession1000Partitions: one consumer of a topic of 1,000
// partitions on one agent, a record at a time on 3 of them; the bytes of
// each Fetch request and response, with fetch sessions off (0 slots) and
// on. Run:
//
//	go test -run '^$' -bench FetchSession1000Partitions -benchtime 200x -timeout 10m ./internal/e2e/
func BenchmarkFetchSession1000Partitions(b *testing.B) {
	const topic, partitions = "fetch-session-bench", 1000
	for _, slots := range []int{0, 1000} {
		// One agent for both runs of the sub-benchmark (b.N 1, then the
		// count asked): creating 1,000 partitions takes a while.
		// Closing their logs outlasts the default stop timeout.
		a := testagent.Start(b, testagent.Options{StopTimeout: 2 * time.Minute, ExtraArgs: []string{fmt.Sprintf("--max-incremental-fetch-session-cache-slots=%d", slots)}})
		adm := newAdmin(b, a.Addr())
		adm.SetTimeoutMillis(int32((2 * time.Minute).Milliseconds()))
		if resp, err := adm.CreateTopics(ctxT(b, 3*time.Minute), partitions, 1, nil, topic); err != nil || resp.Error() != nil {
			b.Fatalf("create topic: %v %v", err, resp.Error())
		}
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			producer := newKgo(b, a.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			offsets := map[int32]kgo.Offset{}
			for p := range int32(partitions) {
				offsets[p] = kgo.NewOffset().AtStart()
			}
			counter := &fetchBytes{}
			consumer := newKgo(b, a.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}), kgo.WithHooks(counter))
			var read atomic.Int64
			consume := func(ctx context.Context, want int64) {
				for read.Load() < want {
					fs := consumer.PollFetches(ctx)
					if ctx.Err() != nil {
						b.Fatalf("read %d records of %d", read.Load(), want)
					}
					fs.EachError(func(topic string, p int32, err error) { b.Fatalf("fetch %s/%d: %v", topic, p, err) })
					read.Add(int64(fs.NumRecords()))
				}
			}
			produce := func(i int) {
				r := &kgo.Record{Topic: topic, Partition: int32(i % 3), Value: []byte("little traffic")}
				if err := producer.ProduceSync(ctxT(b, opTimeout), r).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			// Warm up: the first full fetch, and the session opened.
			produce(0)
			consume(ctxT(b, opTimeout), 1)
			counter.reset()
			b.ResetTimer()
			for i := range b.N {
				produce(i)
				consume(ctxT(b, opTimeout), int64(i+2))
			}
			b.StopTimer()
			counter.mu.Lock()
			defer counter.mu.Unlock()
			if counter.fetches > 0 {
				b.ReportMetric(float64(counter.sent)/float64(counter.fetches), "request-B/fetch")
				b.ReportMetric(float64(counter.gotten)/float64(counter.fetches), "response-B/fetch")
				b.ReportMetric(float64(counter.fetches)/float64(b.N), "fetches/op")
			}
		})
	}
}
