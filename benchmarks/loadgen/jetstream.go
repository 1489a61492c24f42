package loadgen

// NATS JetStream as a peer, driven through nats.go with the workload the
// Kafka targets get: the same record values (header and random bytes), the
// same count or duration, the same pacing, and latency measured the same
// way, from a record's scheduled time to its publish acknowledgement (and
// to its consumption in e2e runs).
//
// How Kafka's words map onto JetStream's:
//
//	topic of N partitions   N streams, each on one subject (a stream is
//	                        one ordered log, as a partition is)
//	acks=0/1/all            every publish waits for the stream's PubAck,
//	                        which comes after the file store has the
//	                        message (synced first only with sync_interval:
//	                        always); JetStream has no weaker acknowledgement
//	max buffered records    PublishAsyncMaxPending: publishes in flight
//	linger, compression     none: nats.go sends each publish at once
//	consumer from offset 0  one ordered consumer per stream, deliver all

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream is jetstream-server: a NATS server with JetStream's file store,
// with the server's defaults (SystemJetStream) or with every write synced
// before its acknowledgement (SystemJetStreamSync).
type JetStream struct{ *peerProcess }

func (j *JetStream) System() string { return j.system }

// Seeds is the NATS client URL; no Kafka client can use it.
func (j *JetStream) Seeds() []string { return []string{j.addr} }

// URL is the NATS client URL.
func (j *JetStream) URL() string { return j.addr }

// jsStreams are one run's streams: stream i holds subject i.
type jsStreams struct {
	names, subjects []string
}

func newJSStreams(partitions int) jsStreams {
	id := time.Now().UnixNano()
	var s jsStreams
	for p := range partitions {
		s.names = append(s.names, fmt.Sprintf("bench-%d-%d", id, p))
		s.subjects = append(s.subjects, fmt.Sprintf("bench.%d.%d", id, p))
	}
	return s
}

// runJetStream is Run for a JetStream target: it creates the streams,
// runs cfg, and deletes them. The results are named so that what the
// deferred calls note (a failed delete, the idle connections) reaches the
// caller.
func runJetStream(ctx context.Context, target *JetStream, cfg Config, start Result) (res Result, err error) {
	res = start
	if cfg.Compact {
		return res, fmt.Errorf("%s: --compact: JetStream streams have no compacted topics to compare", target.System())
	}
	nc, err := nats.Connect(target.URL())
	if err != nil {
		return res, fmt.Errorf("%s: connect: %w", target.System(), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return res, err
	}
	streams := newJSStreams(cfg.Partitions)
	for i, name := range streams.names {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{streams.subjects[i]},
			Storage: jetstream.FileStorage, Replicas: 1})
		if err != nil {
			return res, fmt.Errorf("%s: create stream %s: %w", target.System(), name, err)
		}
	}
	defer func() {
		for _, name := range streams.names {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			res.noteError(js.DeleteStream(dctx, name))
			cancel()
		}
	}()
	if cfg.Connections > 0 {
		idle, err := openIdleNATS(ctx, target, cfg)
		if err != nil {
			return res, err
		}
		defer idle.stop(&res) // before the streams are deleted
	}
	switch cfg.Mode {
	case ModeProduce:
		p := jsProduce(ctx, cfg, target.URL(), streams)
		p.fill(&res)
		res.Records, res.Bytes, res.Seconds = p.acked, p.acked*int64(cfg.RecordBytes), p.elapsed.Seconds()
	case ModeEndToEnd:
		tail, err := startJSConsumer(ctx, js, streams)
		if err != nil {
			return res, err
		}
		defer tail.close()
		p := jsProduce(ctx, cfg, target.URL(), streams)
		p.fill(&res)
		res.Records, res.Bytes, res.Seconds = p.acked, p.acked*int64(cfg.RecordBytes), p.elapsed.Seconds()
		c := tail.await(ctx, p.acked, cfg.DrainTimeout)
		res.Consumed = c.records
		e2e := latencyOf(&c.hist)
		res.EndToEnd = &e2e
		res.noteError(c.err)
	case ModeCatchUp:
		p := jsProduce(ctx, cfg, target.URL(), streams)
		p.fill(&res)
		reader, err := startJSConsumer(ctx, js, streams)
		if err != nil {
			return res, err
		}
		defer reader.close()
		c := reader.await(ctx, p.acked, cfg.DrainTimeout)
		res.Consumed = c.records
		res.Records, res.Bytes, res.Seconds = c.records, c.bytes, c.elapsed.Seconds()
		res.noteError(c.err)
	}
	res.setRates()
	return res, ctx.Err()
}

// jsProducer is one producer's connection and its JetStream context, whose
// ack and error handlers record into st.
type jsProducer struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// jsProduce is produce for JetStream: cfg.Producers connections, each
// publishing asynchronously with at most cfg.MaxBufferedRecords
// unacknowledged, records spread over the streams in turn (or by key).
func jsProduce(ctx context.Context, cfg Config, url string, streams jsStreams) *produceStats {
	var (
		st       produceStats
		mu       sync.Mutex // guards st's histogram, counts, errors and lastAck
		lastAck  time.Time
		sent     atomic.Int64
		interval time.Duration
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		st.errors++
		if st.firstError == nil {
			st.firstError = err
		}
	}
	onAck := func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
		now := time.Now()
		sched, ok := scheduled(m.Data)
		if !ok {
			return // a warm-up message
		}
		mu.Lock()
		defer mu.Unlock()
		st.acked++
		st.hist.Record(now.Sub(sched))
		if now.After(lastAck) {
			lastAck = now
		}
	}
	onErr := func(_ jetstream.JetStream, m *nats.Msg, err error) {
		if _, ok := scheduled(m.Data); ok {
			fail(err)
		}
	}
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(cfg.Producers) / float64(cfg.Rate))
	}
	producers := make([]*jsProducer, cfg.Producers)
	for p := range producers {
		pr, err := newJSProducer(ctx, cfg, url, streams, onAck, onErr)
		if err != nil {
			fail(err)
			continue
		}
		producers[p] = pr
	}
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for p, pr := range producers {
		if pr == nil {
			continue
		}
		pace := newPacer(cfg, p, start, deadline, interval)
		wg.Go(func() {
			defer pr.nc.Close()
			template := newPayload(cfg.RecordBytes, cfg.Seed, p)
			for seq := int64(0); ; seq++ {
				sched, ok := pace.next(ctx, seq)
				if !ok {
					break
				}
				var subject string
				if cfg.Keys > 0 {
					h := fnv.New32a()
					h.Write(keyOf(cfg.Keys, seq))
					subject = streams.subjects[h.Sum32()%uint32(len(streams.subjects))]
				} else {
					subject = streams.subjects[(int64(p)+seq)%int64(len(streams.subjects))]
				}
				sent.Add(1)
				// A full window blocks here (up to the drain timeout), as
				// kgo's Produce blocks at MaxBufferedRecords.
				_, err := pr.js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: stamp(template, sched, p, seq)},
					jetstream.WithStallWait(cfg.DrainTimeout))
				if err != nil {
					fail(err)
				}
			}
			timer := time.NewTimer(cfg.DrainTimeout)
			defer timer.Stop()
			select {
			case <-pr.js.PublishAsyncComplete():
			case <-timer.C:
				// Closing the connection fails what is left through
				// onErr, so the counts still add up.
			case <-ctx.Done():
			}
		})
	}
	wg.Wait()
	// Close (in each goroutine) may have failed the last publishes from
	// nats.go's goroutines; wait for their handlers to have counted.
	waitUntil(cfg.DrainTimeout, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return st.acked+st.errors >= sent.Load()
	})
	mu.Lock()
	defer mu.Unlock()
	st.sent = sent.Load()
	if missing := st.sent - st.acked - st.errors; missing > 0 {
		st.errors += missing
		if st.firstError == nil {
			st.firstError = fmt.Errorf("%d publishes neither acknowledged nor failed within %v", missing, cfg.DrainTimeout)
		}
	}
	if !lastAck.IsZero() {
		st.elapsed = lastAck.Sub(start)
	}
	return &st
}

// newJSProducer connects one producer and warms it up outside the
// measurement: one acknowledged publish to each stream.
func newJSProducer(ctx context.Context, cfg Config, url string, streams jsStreams,
	onAck jetstream.MsgAckHandler, onErr jetstream.MsgErrHandler) (*jsProducer, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.MaxBufferedRecords),
		jetstream.WithPublishAsyncAckHandler(onAck), jetstream.WithPublishAsyncErrHandler(onErr),
		jetstream.WithPublishAsyncTimeout(cfg.DrainTimeout))
	if err != nil {
		nc.Close()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	defer cancel()
	for _, subject := range streams.subjects {
		if _, err := js.Publish(wctx, subject, warmUpValue); err != nil {
			nc.Close()
			return nil, fmt.Errorf("warm-up publish: %w", err)
		}
	}
	return &jsProducer{nc: nc, js: js}, nil
}

// startJSConsumer reads every stream from its first message with an
// ordered consumer each.
func startJSConsumer(ctx context.Context, js jetstream.JetStream, streams jsStreams) (*consumer, error) {
	c := newConsumer()
	var ccs []jetstream.ConsumeContext
	stop := func() {
		for _, cc := range ccs {
			cc.Stop()
			<-cc.Closed()
		}
	}
	for _, name := range streams.names {
		cons, err := js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		if err != nil {
			stop()
			return nil, fmt.Errorf("ordered consumer on %s: %w", name, err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			now := time.Now()
			c.mu.Lock()
			c.observeLocked(now, m.Data())
			c.cond.Broadcast()
			c.mu.Unlock()
		}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				return // the ordered consumer recreates itself
			}
			c.mu.Lock()
			c.failLocked(err)
			c.mu.Unlock()
		}))
		if err != nil {
			stop()
			return nil, fmt.Errorf("consume %s: %w", name, err)
		}
		ccs = append(ccs, cc)
	}
	c.stop = stop
	return c, nil
}

// waitUntil polls cond every millisecond until it holds or timeout passes.
func waitUntil(timeout time.Duration, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}
