package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Run creates a fresh topic on target, runs cfg against it, and deletes
// the topic, so that one run's data (and the work the target does with it
// in the background, such as uploading sealed segments) does not weigh on
// the next run. A failed delete counts as one error of the run. Every
// Kafka client of the run connects with the target's Security, if it has
// one (a SASL_SSL listener).
func Run(ctx context.Context, target Target, cfg Config) (res Result, err error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	res = Result{System: target.System(), Scenario: cfg.name(), Mode: cfg.Mode, Settings: settingsOf(cfg),
		Machine: machineNow(), Start: time.Now().UTC().Format(time.RFC3339)}
	if js, ok := target.(*JetStream); ok {
		if cfg.Diskless {
			return res, fmt.Errorf("%s: --diskless needs a Kafka target", target.System())
		}
		return runJetStream(ctx, js, cfg, res)
	}
	base, err := clientOpts(target)
	if err != nil {
		return res, err
	}
	topic := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	var configs map[string]*string
	metered, isMetered := target.(storeMetered)
	diskless := cfg.Diskless
	moder, choosesMode := target.(topicModer)
	if choosesMode {
		diskless = moder.disklessTopics()
		mode := cfg
		mode.Diskless = diskless
		if err := mode.Validate(); err != nil {
			return res, fmt.Errorf("%s: %w", target.System(), err)
		}
	}
	switch {
	case cfg.Mode == ModeCatchUpStore:
		if !isMetered {
			return res, fmt.Errorf("%s: --mode %s needs a Strata target", target.System(), cfg.Mode)
		}
		configs = storeTopicConfigs()
	case cfg.Compact:
		configs = compactTopicConfigs()
	case diskless:
		configs = disklessTopicConfigs()
	}
	// The store's writes are read around the timed phase of a run on a
	// target that chooses its topics' mode, classic runs included, so
	// that the two systems are measured alike.
	var writes *writesProbe
	if isMetered && (diskless || choosesMode) {
		writes = &writesProbe{addrs: metered.metricsAddrs()}
	}
	if err := createTopic(ctx, base, topic, cfg.Partitions, cfg.ReplicationFactor, configs); err != nil {
		return res, err
	}
	// Deferred first, so it runs after the consumers have closed.
	defer func() { res.noteError(deleteTopic(ctx, base, topic)) }()
	if isMetered {
		m := metered
		before, err := storePuts(ctx, m.metricsAddrs())
		if err != nil {
			return res, err
		}
		// Deferred after the topic's delete and before the consumers'
		// close, so it runs after the consumers stop and before the delete.
		defer func() {
			after, err := settlePuts(ctx, m.metricsAddrs(), cfg.UploadSettle, cfg.DrainTimeout)
			res.noteError(err)
			puts := after - before
			res.StorePuts = &puts
		}()
	}
	var cleanerBefore CleanerWork
	if cfg.Compact && isMetered {
		if cleanerBefore, err = cleanerCounters(ctx, metered.metricsAddrs()); err != nil {
			return res, err
		}
	}
	if cfg.Connections > 0 {
		idle, err := openIdleKafka(ctx, target, topic, cfg)
		if err != nil {
			return res, err
		}
		// Deferred after the PUT count, so the connections close before
		// it is read and before the topic is deleted.
		defer idle.stop(&res)
	}
	switch cfg.Mode {
	case ModeProduce:
		p := produce(ctx, cfg, base, topic, writes.start)
		p.fill(&res)
		writes.finish(ctx, &res, p.acked*int64(cfg.RecordBytes))
		res.Records, res.Bytes, res.Seconds = p.acked, p.acked*int64(cfg.RecordBytes), p.elapsed.Seconds()
	case ModeEndToEnd:
		tail, err := startConsumer(base, topic)
		if err != nil {
			return res, err
		}
		defer tail.close()
		p := produce(ctx, cfg, base, topic, writes.start)
		p.fill(&res)
		writes.finish(ctx, &res, p.acked*int64(cfg.RecordBytes))
		res.Records, res.Bytes, res.Seconds = p.acked, p.acked*int64(cfg.RecordBytes), p.elapsed.Seconds()
		c := tail.await(ctx, p.acked, cfg.DrainTimeout)
		res.Consumed = c.records
		e2e := latencyOf(&c.hist)
		res.EndToEnd = &e2e
		res.noteError(c.err)
	case ModeCatchUp, ModeCatchUpStore:
		p := produce(ctx, cfg, base, topic, writes.start)
		p.fill(&res)
		writes.finish(ctx, &res, p.acked*int64(cfg.RecordBytes))
		if cfg.Mode == ModeCatchUpStore {
			if err := awaitTiered(ctx, metered.metricsAddrs(), topic, cfg.Partitions, cfg.DrainTimeout); err != nil {
				return res, err
			}
			if cfg.Warm {
				warm, err := startConsumer(base, topic)
				if err != nil {
					return res, err
				}
				c := warm.await(ctx, p.acked, cfg.DrainTimeout)
				warm.close()
				if c.err != nil {
					return res, fmt.Errorf("warm-up read: %w", c.err)
				}
			}
		}
		var before StoreRead
		if cfg.Mode == ModeCatchUpStore {
			if before, err = storeReads(ctx, metered.metricsAddrs(), topic); err != nil {
				return res, err
			}
		}
		reader, err := startConsumer(base, topic)
		if err != nil {
			return res, err
		}
		defer reader.close()
		c := reader.await(ctx, p.acked, cfg.DrainTimeout)
		res.Consumed = c.records
		res.Records, res.Bytes, res.Seconds = c.records, c.bytes, c.elapsed.Seconds()
		res.noteError(c.err)
		if cfg.Mode == ModeCatchUpStore {
			// Read as soon as the last record is in, before the reader
			// stops, so that the numbers are the timed read's.
			after, err := storeReads(ctx, metered.metricsAddrs(), topic)
			if err != nil {
				return res, err
			}
			read := after.since(before)
			res.StoreRead = &read
		}
	}
	if cfg.inspect != nil {
		cfg.inspect(ctx, topic)
	}
	if cfg.Compact && isMetered {
		after, err := cleanerCounters(ctx, metered.metricsAddrs())
		if err != nil {
			return res, err
		}
		work := after.since(cleanerBefore)
		res.Cleaner = &work
	}
	res.setRates()
	return res, ctx.Err()
}

// setRates derives records/s and MB/s from the counts and the time.
func (r *Result) setRates() {
	if r.Seconds > 0 {
		r.RecordsPerSec = float64(r.Records) / r.Seconds
		r.MBPerSec = float64(r.Bytes) / r.Seconds / 1e6
	}
}

// noteError counts a failure that is not a record's (a consumer that did
// not catch up) as one error.
func (r *Result) noteError(err error) {
	if err == nil {
		return
	}
	r.Errors++
	if r.FirstError == "" {
		r.FirstError = err.Error()
	}
}

// produceStats is the outcome of a produce phase.
type produceStats struct {
	sent, acked, errors int64
	firstError          error
	hist                Histogram
	elapsed             time.Duration // from the first send to the last acknowledgement
}

func (p *produceStats) fill(r *Result) {
	r.Sent, r.Acked, r.Errors = p.sent, p.acked, p.errors
	if p.firstError != nil {
		r.FirstError = p.firstError.Error()
	}
	r.Produce = latencyOf(&p.hist)
}

// writesProbe reads StoreWrites' counters before and after a produce
// phase. Its methods do nothing on a nil probe.
type writesProbe struct {
	addrs  []string
	before storeWriteCounters
	err    error
}

// start is produce's started: the first reading.
func (w *writesProbe) start(ctx context.Context) {
	if w != nil {
		w.before, w.err = readStoreWrites(ctx, w.addrs)
	}
}

// finish reads the counters again and sets res.StoreWrites, over bytes of
// acknowledged record values; a failed reading counts as an error of the
// run and leaves it unset.
func (w *writesProbe) finish(ctx context.Context, res *Result, bytes int64) {
	if w == nil {
		return
	}
	if w.err != nil {
		res.noteError(fmt.Errorf("store writes: %w", w.err))
		return
	}
	after, err := readStoreWrites(ctx, w.addrs)
	if err != nil {
		res.noteError(fmt.Errorf("store writes: %w", err))
		return
	}
	d := after.since(w.before, bytes)
	res.StoreWrites = &d
}

// produce runs cfg.Producers clients until the duration or count is done
// and every record is acknowledged, failed, or given up on after
// cfg.DrainTimeout. Each client is warmed up before the clock starts;
// started is called once they are, just before it starts.
func produce(ctx context.Context, cfg Config, base []kgo.Opt, topic string, started func(context.Context)) *produceStats {
	var (
		st       produceStats
		mu       sync.Mutex // guards st's histogram, errors and lastAck
		lastAck  time.Time
		sent     atomic.Int64
		interval time.Duration
		wg       sync.WaitGroup
	)
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(cfg.Producers) / float64(cfg.Rate))
	}
	clients := make([]*kgo.Client, cfg.Producers)
	for p := range clients {
		cl, err := kgo.NewClient(append(producerOpts(cfg, base, topic), txnOpts(cfg, topic, p)...)...)
		if err == nil {
			if err = warmUp(ctx, cl, cfg); err != nil {
				cl.Close()
			}
		}
		if err != nil {
			st.errors++
			if st.firstError == nil {
				st.firstError = err
			}
			continue
		}
		clients[p] = cl
	}
	started(ctx)
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	for p, cl := range clients {
		if cl == nil {
			continue
		}
		pace := newPacer(cfg, p, start, deadline, interval)
		wg.Go(func() {
			defer cl.Close()
			template := newPayload(cfg.RecordBytes, cfg.Seed, p)
			// In a transactional run a record counts once its transaction
			// commits: inTxn holds the acknowledged ones until then.
			var inTxn atomic.Int64
			commit := func() bool {
				err := endTxn(ctx, cl, cfg)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					st.errors++
					if st.firstError == nil {
						st.firstError = err
					}
					return false
				}
				st.acked += inTxn.Swap(0)
				lastAck = time.Now()
				return true
			}
			open := false
			for seq := int64(0); ; seq++ {
				sched, ok := pace.next(ctx, seq)
				if !ok {
					break
				}
				if cfg.TxnRecords > 0 && !open {
					if err := cl.BeginTransaction(); err != nil {
						mu.Lock()
						st.errors++
						if st.firstError == nil {
							st.firstError = err
						}
						mu.Unlock()
						break
					}
					open = true
				}
				rec := &kgo.Record{Value: stamp(template, sched, p, seq)}
				if cfg.Keys > 0 {
					rec.Key = keyOf(cfg.Keys, seq)
				}
				sent.Add(1)
				cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
					now := time.Now()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						st.errors++
						if st.firstError == nil {
							st.firstError = err
						}
						return
					}
					st.hist.Record(now.Sub(sched))
					if cfg.TxnRecords > 0 {
						inTxn.Add(1)
						return
					}
					st.acked++
					if now.After(lastAck) {
						lastAck = now
					}
				})
				if open && (seq+1)%int64(cfg.TxnRecords) == 0 {
					open = false
					if !commit() {
						break
					}
				}
			}
			if open {
				commit()
			}
			// Wait for what is in flight; at the drain timeout, Close (deferred)
			// fails whatever is left, and its promises count as errors.
			drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout)
			defer cancel()
			_ = cl.Flush(drain)
		})
	}
	wg.Wait()
	st.sent = sent.Load()
	if !lastAck.IsZero() {
		st.elapsed = lastAck.Sub(start)
	}
	return &st
}

// warmUpValue is shorter than the record header, so consumers skip it.
// In a keyed run it is also the warm-up records' key (a compacted topic
// refuses records without one), outside the run's key space.
var warmUpValue = []byte("warm-up")

// warmUp sends cfg.Partitions records together and waits for them all,
// outside the measurement, so that connecting, fetching metadata and
// getting a producer id do not land in the first records' latency.
// Without keys the round-robin partitioner sends one to every partition
// (and so connects to every leader); with keys they may all go to one.
// Together, not one at a time: on a diskless topic each answer waits for
// a commit interval (250 ms), and 4 producers of 8 partitions one at a
// time would wait 8 s before every run.
func warmUp(ctx context.Context, cl *kgo.Client, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
	defer cancel()
	if cfg.TxnRecords > 0 {
		if err := cl.BeginTransaction(); err != nil {
			return fmt.Errorf("warm-up transaction: %w", err)
		}
	}
	recs := make([]*kgo.Record, cfg.Partitions)
	for i := range recs {
		recs[i] = &kgo.Record{Value: warmUpValue}
		if cfg.Keys > 0 {
			recs[i].Key = warmUpValue
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("warm-up produce: %w", err)
	}
	if cfg.TxnRecords > 0 {
		return endTxn(ctx, cl, cfg)
	}
	return nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// consumer reads a topic (or JetStream's streams) from the start in its
// own goroutines, recording the end-to-end latency of each record it has
// not seen before. stop ends the reading and waits for it.
type consumer struct {
	stop    func()
	started time.Time

	mu   sync.Mutex
	cond *sync.Cond // signalled on every poll
	stat consumeStats
	seen map[uint64]struct{}
}

// consumeStats is the outcome of a consume phase.
type consumeStats struct {
	records, bytes int64
	hist           Histogram
	elapsed        time.Duration // from the consumer's start to the last new record
	err            error
}

func newConsumer() *consumer {
	c := &consumer{started: time.Now(), seen: map[uint64]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// observeLocked counts value, read at now, unless it is a warm-up record or
// one seen before. The caller holds c.mu.
func (c *consumer) observeLocked(now time.Time, value []byte) {
	sched, ok := scheduled(value)
	if !ok {
		return
	}
	key := sequence(value)
	if _, dup := c.seen[key]; dup {
		return
	}
	c.seen[key] = struct{}{}
	c.stat.records++
	c.stat.bytes += int64(len(value))
	c.stat.hist.Record(now.Sub(sched))
	c.stat.elapsed = now.Sub(c.started)
}

// failLocked keeps the first error. The caller holds c.mu.
func (c *consumer) failLocked(err error) {
	if c.stat.err == nil && !errors.Is(err, context.Canceled) {
		c.stat.err = err
	}
}

// startConsumer starts a client from base (clientOpts) reading topic.
func startConsumer(base []kgo.Opt, topic string) (*consumer, error) {
	cl, err := kgo.NewClient(slices.Concat(base, []kgo.Opt{kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())})...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := newConsumer()
	done := make(chan struct{})
	c.stop = func() {
		cancel()
		<-done
		cl.Close()
	}
	go func() {
		defer close(done)
		c.loop(ctx, cl)
	}()
	return c, nil
}

func (c *consumer) loop(ctx context.Context, cl *kgo.Client) {
	for {
		fetches := cl.PollFetches(ctx)
		now := time.Now()
		c.mu.Lock()
		fetches.EachError(func(_ string, _ int32, err error) { c.failLocked(err) })
		fetches.EachRecord(func(r *kgo.Record) { c.observeLocked(now, r.Value) })
		c.cond.Broadcast()
		c.mu.Unlock()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return
		}
	}
}

// await waits until the consumer has seen want records, or timeout has
// passed since this call, and returns what it saw.
func (c *consumer) await(ctx context.Context, want int64, timeout time.Duration) consumeStats {
	give := time.AfterFunc(timeout, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer give.Stop()
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	deadline := time.Now().Add(timeout)
	c.mu.Lock()
	for c.stat.records < want && time.Now().Before(deadline) && ctx.Err() == nil {
		c.cond.Wait()
	}
	st := c.stat
	c.mu.Unlock()
	if st.records < want && st.err == nil {
		st.err = fmt.Errorf("consumer read %d of %d records within %v", st.records, want, timeout)
	}
	return st
}

func (c *consumer) close() { c.stop() }

// pacer gives one producer's records their scheduled send times.
type pacer struct {
	start, deadline time.Time
	interval        time.Duration
	quota           int64 // records this producer sends; -1: until deadline
}

// newPacer is producer p's share of cfg.Records (or no count: until the
// deadline), paced at interval (0: closed loop).
func newPacer(cfg Config, p int, start, deadline time.Time, interval time.Duration) pacer {
	quota := int64(-1)
	if cfg.Records > 0 {
		quota = cfg.Records / int64(cfg.Producers)
		if int64(p) < cfg.Records%int64(cfg.Producers) {
			quota++
		}
	}
	return pacer{start: start, deadline: deadline, interval: interval, quota: quota}
}

// next returns record seq's scheduled time, waiting for it in an open loop
// (the record is due at its slot whether or not the broker kept up, so
// sending late shows as latency) and taking now in a closed loop. ok is
// false once the producer is done: its quota sent, the deadline passed or
// ctx ended.
func (pc pacer) next(ctx context.Context, seq int64) (sched time.Time, ok bool) {
	if pc.quota >= 0 && seq >= pc.quota {
		return sched, false
	}
	if pc.interval > 0 {
		sched = pc.start.Add(time.Duration(seq) * pc.interval)
		if pc.quota < 0 && !sched.Before(pc.deadline) {
			return sched, false
		}
		if wait := time.Until(sched); wait > 0 && sleep(ctx, wait) != nil {
			return sched, false
		}
	} else {
		sched = time.Now()
		if pc.quota < 0 && !sched.Before(pc.deadline) {
			return sched, false
		}
	}
	return sched, ctx.Err() == nil
}
