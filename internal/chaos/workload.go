package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The workload: idempotent acks=all producers, one acks=1 producer, a
// consumer group, and a sampler of the group's committed offsets. Each
// runs in a goroutine the workload owns; stopProducers and stopConsumers
// wait for them. Everything they observe goes to one recorder.

// Workload limits.
const (
	deliveryTimeout   = 30 * time.Second // a record not acknowledged by then fails
	maxBufferedRecs   = 2000             // per producer; produce skips records beyond it
	flushTimeout      = 60 * time.Second // stopProducers' wait for records in flight
	pollTimeout       = time.Second
	maxPollRecords    = 1000
	commitTimeout     = 15 * time.Second
	commitInterval    = 100 * time.Millisecond
	idlePoll          = 20 * time.Millisecond
	sampleInterval    = 500 * time.Millisecond
	leaveGroupTimeout = 10 * time.Second
	maxErrorsKept     = 10 // first errors of each kind kept for the result
)

// groupName is the workload's consumer group.
const groupName = "chaos-group"

// recorder holds everything the workload observed.
type recorder struct {
	mu         sync.Mutex
	acksAll    []Ack
	acksOne    []Ack
	failedAll  int
	failedOne  int
	produceErr []string
	dataLoss   []string // partitions on which the client itself detected loss
	skipped    int      // records not produced: the client's buffer was full
	deliveries []Delivery
	commits    []Commit
	commitSeq  uint64
	commitErrs map[string]int // by error
	samples    []CommitSample
	fetchErrs  int
	consumeErr []string
}

func (r *recorder) produced(acksAll bool, rec *kgo.Record, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if acksAll {
			r.failedAll++
		} else {
			r.failedOne++
		}
		if len(r.produceErr) < maxErrorsKept {
			r.produceErr = append(r.produceErr, fmt.Sprintf("%s-%d: %v", rec.Topic, rec.Partition, err))
		}
		return
	}
	a := Ack{TopicPartition{rec.Topic, rec.Partition}, rec.Offset, string(rec.Value), time.Now()}
	if acksAll {
		r.acksAll = append(r.acksAll, a)
	} else {
		r.acksOne = append(r.acksOne, a)
	}
}

func (r *recorder) skip() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skipped++
}

func (r *recorder) lossDetected(topic string, partition int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dataLoss = append(r.dataLoss, fmt.Sprintf("%s-%d at %s", topic, partition, time.Now().Format(time.TimeOnly)))
}

func (r *recorder) counts() (acksAll, acksOne int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acksAll), len(r.acksOne)
}

// committed records the partitions of an acknowledged commit.
func (r *recorder) committed(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.commitError(err)
		return
	}
	sent := map[TopicPartition]int64{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			sent[TopicPartition{rt.Topic, rp.Partition}] = rp.Offset
		}
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			tp := TopicPartition{rt.Topic, rp.Partition}
			off, ok := sent[tp]
			if rp.ErrorCode != 0 || !ok {
				r.commitError(kerr.ErrorForCode(rp.ErrorCode))
				continue
			}
			r.commitSeq++
			r.commits = append(r.commits, Commit{Seq: r.commitSeq, TopicPartition: tp, Offset: off, Member: req.MemberID, Generation: req.Generation})
		}
	}
}

// commitError counts a failed commit by its error, with the common
// client-side ones folded (a commit cancelled by its timeout).
func (r *recorder) commitError(err error) {
	if r.commitErrs == nil {
		r.commitErrs = map[string]int{}
	}
	name := "nil"
	if err != nil {
		name = err.Error()
		if ke, ok := err.(*kerr.Error); ok {
			name = ke.Message
		}
		if errors.Is(err, context.DeadlineExceeded) {
			name = "commit timed out"
		}
	}
	if len(name) > 80 {
		name = name[:80]
	}
	r.commitErrs[name]++
}

func (r *recorder) lastCommitSeq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commitSeq
}

// workload runs the clients.
type workload struct {
	cfg    Config
	rec    *recorder
	seeds  []string
	allTPs []TopicPartition // the acks=all topics' partitions
	oneTPs []TopicPartition // the acks=1 topic's

	prodCancel context.CancelFunc // stops producing new records
	prodWG     sync.WaitGroup
	producers  []*kgo.Client
	// clientLogs are the producers' own logs (clientLog), closed with them.
	clientLogs []*os.File

	consCancel context.CancelFunc
	consWG     sync.WaitGroup

	stopProducersOnce, stopConsumersOnce sync.Once
	stopProducersErr                     error
}

func newWorkload(cfg Config, seeds []string, allTPs, oneTPs []TopicPartition) *workload {
	return &workload{cfg: cfg, rec: &recorder{}, seeds: seeds, allTPs: allTPs, oneTPs: oneTPs}
}

// start starts every client; stopProducers and stopConsumers end them.
func (w *workload) start() error {
	pctx, pcancel := context.WithCancel(context.Background())
	w.prodCancel = pcancel
	for i := range w.cfg.Producers {
		name := fmt.Sprintf("all%d", i)
		logger, err := w.clientLog(name)
		if err != nil {
			return err
		}
		opts := []kgo.Opt{kgo.SeedBrokers(w.seeds...), logger,
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordDeliveryTimeout(deliveryTimeout),
			kgo.MaxBufferedRecords(maxBufferedRecs),
			kgo.ProducerLinger(2 * time.Millisecond),
			kgo.ProducerOnDataLossDetected(w.rec.lossDetected)}
		if w.cfg.MetadataMinAge > 0 {
			opts = append(opts, kgo.MetadataMinAge(w.cfg.MetadataMinAge))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		w.producers = append(w.producers, cl)
		w.prodWG.Add(1)
		go func() {
			defer w.prodWG.Done()
			w.produce(pctx, cl, name, w.allTPs, true)
		}()
	}
	if len(w.oneTPs) > 0 { // none in diskless mode (Config.Diskless)
		logger, err := w.clientLog("one")
		if err != nil {
			return err
		}
		one, err := kgo.NewClient(kgo.SeedBrokers(w.seeds...), logger,
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
			kgo.RecordDeliveryTimeout(deliveryTimeout),
			kgo.MaxBufferedRecords(maxBufferedRecs),
			kgo.ProducerLinger(2*time.Millisecond))
		if err != nil {
			return err
		}
		w.producers = append(w.producers, one)
		w.prodWG.Add(1)
		go func() {
			defer w.prodWG.Done()
			w.produce(pctx, one, "one", w.oneTPs, false)
		}()
	}

	cctx, ccancel := context.WithCancel(context.Background())
	w.consCancel = ccancel
	topics := map[string]bool{}
	for _, tp := range w.allTPs {
		topics[tp.Topic] = true
	}
	var names []string
	for t := range topics {
		names = append(names, t)
	}
	for range w.cfg.Consumers {
		cl, err := kgo.NewClient(kgo.SeedBrokers(w.seeds...),
			kgo.ConsumerGroup(groupName), kgo.ConsumeTopics(names...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			// Eager: a member's generation changes only after it has given
			// its partitions up, which BlockRebalanceOnPoll holds off
			// between a poll and AllowRebalance; so the generation read
			// after a poll is the one the records were polled in.
			kgo.Balancers(kgo.RangeBalancer()),
			kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
			kgo.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return err
		}
		w.consWG.Add(1)
		go func() {
			defer w.consWG.Done()
			w.consume(cctx, cl)
		}()
	}
	adm, err := kgo.NewClient(kgo.SeedBrokers(w.seeds...))
	if err != nil {
		return err
	}
	w.consWG.Add(1)
	go func() {
		defer w.consWG.Done()
		defer adm.Close()
		w.sample(cctx, kadm.NewClient(adm))
	}()
	return nil
}

// clientLog opens OutDir/client-<name>.log for a producer's own log at
// info level: its failed requests and batches, metadata refreshes and
// producer id resets, which explain a long produce gap. With no OutDir
// the client logs nothing.
func (w *workload) clientLog(name string) (kgo.Opt, error) {
	if w.cfg.OutDir == "" {
		return kgo.WithLogger(nil), nil
	}
	f, err := os.Create(filepath.Join(w.cfg.OutDir, "client-"+name+".log"))
	if err != nil {
		return nil, err
	}
	w.clientLogs = append(w.clientLogs, f)
	stamp := func() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z ") }
	return kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelInfo, stamp)), nil
}

// produce sends one record every ProduceInterval to each partition of tps
// in turn until ctx ends. Records are produced with a context that is
// never cancelled: one in the client's buffer ends acknowledged or failed
// (after deliveryTimeout, unless an idempotent producer's request for it
// may still be in flight, which it cannot fail), never cancelled by the
// stop. It never blocks: while the client holds maxBufferedRecs records
// not yet answered (a cluster that stopped acknowledging), a tick's record
// is skipped and counted, so that the run still ends and reports.
func (w *workload) produce(ctx context.Context, cl *kgo.Client, name string, tps []TopicPartition, acksAll bool) {
	tick := time.NewTicker(w.cfg.ProduceInterval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if cl.BufferedProduceRecords() >= maxBufferedRecs {
			w.rec.skip()
			continue
		}
		tp := tps[seq%len(tps)]
		rec := &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Value: fmt.Appendf(nil, "%s-%09d", name, seq)}
		cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) { w.rec.produced(acksAll, r, err) })
	}
}

// consume polls, records what it received with its member id and
// generation, and commits what it polled before letting a rebalance in.
func (w *workload) consume(ctx context.Context, cl *kgo.Client) {
	defer func() {
		lctx, cancel := context.WithTimeout(context.Background(), leaveGroupTimeout)
		defer cancel()
		cl.LeaveGroupContext(lctx)
		cl.Close()
	}()
	var lastCommit time.Time
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, pollTimeout)
		polled := time.Now()
		fs := cl.PollRecords(pctx, maxPollRecords)
		cancel()
		if fs.NumRecords() == 0 && time.Since(polled) < idlePoll {
			// An error returned at once (a group error while the
			// coordinator moves): do not spin.
			time.Sleep(idlePoll)
		}
		member, generation := cl.GroupMetadata()
		var deliveries []Delivery
		fs.EachRecord(func(r *kgo.Record) {
			deliveries = append(deliveries, Delivery{TopicPartition{r.Topic, r.Partition}, r.Offset, string(r.Value), member, generation})
		})
		var errs []string
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				errs = append(errs, fmt.Sprintf("%s-%d: %v", topic, p, err))
			}
		})
		w.rec.mu.Lock()
		w.rec.deliveries = append(w.rec.deliveries, deliveries...)
		w.rec.fetchErrs += len(errs)
		for _, e := range errs {
			if len(w.rec.consumeErr) < maxErrorsKept {
				w.rec.consumeErr = append(w.rec.consumeErr, e)
			}
		}
		w.rec.mu.Unlock()
		// At most one commit per commitInterval: while the group
		// rebalances, polls return at once and every commit is refused.
		if offsets := cl.UncommittedOffsets(); len(offsets) > 0 && time.Since(lastCommit) >= commitInterval {
			lastCommit = time.Now()
			cctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
			cl.CommitOffsetsSync(cctx, offsets, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				w.rec.committed(req, resp, err)
			})
			cancel()
		}
		cl.AllowRebalance()
	}
}

// sample reads the group's committed offsets every sampleInterval.
func (w *workload) sample(ctx context.Context, adm *kadm.Client) {
	tick := time.NewTicker(sampleInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.sampleOnce(ctx, adm)
	}
}

// sampleOnce records one OffsetFetch of the group, and returns it.
func (w *workload) sampleOnce(ctx context.Context, adm *kadm.Client) map[TopicPartition]int64 {
	after := w.rec.lastCommitSeq()
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := adm.FetchOffsets(rctx, groupName)
	if err != nil {
		return nil
	}
	out := map[TopicPartition]int64{}
	var samples []CommitSample
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Err != nil {
			return
		}
		tp := TopicPartition{o.Topic, o.Partition}
		out[tp] = o.At
		samples = append(samples, CommitSample{After: after, TopicPartition: tp, Offset: o.At})
	})
	w.rec.mu.Lock()
	w.rec.samples = append(w.rec.samples, samples...)
	w.rec.mu.Unlock()
	return out
}

// stopProducers stops new records, waits for those in flight (bounded by
// flushTimeout) and closes the producers. Later calls return the first
// call's error.
func (w *workload) stopProducers() error {
	w.stopProducersOnce.Do(func() { w.stopProducersErr = w.stopProducersNow() })
	return w.stopProducersErr
}

func (w *workload) stopProducersNow() error {
	if w.prodCancel == nil {
		return nil // never started
	}
	w.prodCancel()
	w.prodWG.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	var errs []error
	for _, cl := range w.producers {
		if err := cl.Flush(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flush: %w", err))
		}
		cl.Close()
	}
	for _, f := range w.clientLogs {
		if err := f.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stopConsumers ends the group members (they leave the group) and the sampler.
// It may be called twice.
func (w *workload) stopConsumers() {
	w.stopConsumersOnce.Do(func() {
		if w.consCancel != nil {
			w.consCancel()
		}
		w.consWG.Wait()
	})
}
