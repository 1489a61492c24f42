package abuse

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// workload is the well-behaved traffic: one idempotent acks=all producer
// and one consumer on one topic. Each record's value starts with its
// producer sequence number (8 bytes, big endian), so acknowledged and read
// records are kept as bit sets, whatever the run's length.
type workload struct {
	topic     string
	valueSize int
	rate      int // records per second; 0 is as fast as the agent acknowledges

	prod, cons  *kgo.Client
	stopProduce chan struct{} // closed once, by stopProducing
	stopOnce    sync.Once
	closeOnce   sync.Once
	producing   sync.WaitGroup
	cancel      context.CancelFunc // ends the consumer
	consuming   sync.WaitGroup

	mu         sync.Mutex
	acked      bitset
	read       bitset
	duplicates int64
	firstErr   error

	ackedN, readN, failures atomic.Int64
	retried                 atomic.Int64 // retriable fetch errors, reported only
	ackedBytes              atomic.Int64
}

// bitset is a growable set of small non-negative integers.
type bitset []uint64

// add inserts n and reports whether it was new.
func (b *bitset) add(n int64) bool {
	i := int(n / 64)
	for len(*b) <= i {
		*b = append(*b, 0)
	}
	bit := uint64(1) << (n % 64)
	had := (*b)[i]&bit != 0
	(*b)[i] |= bit
	return !had
}

func (b bitset) has(n int64) bool {
	i := int(n / 64)
	return i < len(b) && b[i]&(uint64(1)<<(n%64)) != 0
}

// startWorkload creates topic (partitions, replication factor 1, configs)
// on the agent at addr and starts producing and consuming. Stop it with
// finish.
func startWorkload(t *testing.T, addr, topic string, partitions int32, configs map[string]*string, valueSize, rate int) *workload {
	t.Helper()
	w := &workload{topic: topic, valueSize: max(valueSize, 8), rate: rate}
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(adm).CreateTopics(ctx, partitions, 1, configs, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	// The defaults are acks=all and idempotent; say so anyway, since the
	// test is about those clients.
	w.prod, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(4096), kgo.ProducerLinger(2*time.Millisecond),
		// Uncompressed, with values that would not compress anyway: the
		// bytes counted are the bytes the agent moves.
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	w.cons, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		w.prod.Close()
		t.Fatal(err)
	}
	var cctx context.Context
	cctx, w.cancel = context.WithCancel(context.Background())
	w.stopProduce = make(chan struct{})
	w.producing.Add(1)
	w.consuming.Add(1)
	go w.produce()
	go w.consume(cctx)
	t.Cleanup(w.close)
	return w
}

func (w *workload) fail(err error) {
	w.failures.Add(1)
	w.mu.Lock()
	if w.firstErr == nil {
		w.firstErr = err
	}
	w.mu.Unlock()
}

// produce runs until stopProducing. Records carry no context of their own,
// so stopping never fails one that is already buffered: Flush waits for
// its answer.
func (w *workload) produce() {
	defer w.producing.Done()
	// With a rate, records go out in bursts every 10 ms.
	var tick *time.Ticker
	perTick := 0
	if w.rate > 0 {
		tick = time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		perTick = max(w.rate/100, 1)
	}
	filler := make([]byte, 64<<10)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range filler {
		filler[i] = byte(rng.Uint32())
	}
	for seq := int64(0); ; {
		if tick != nil {
			select {
			case <-w.stopProduce:
				return
			case <-tick.C:
			}
		}
		for i := 0; i < max(perTick, 1); i++ {
			select {
			case <-w.stopProduce:
				return
			default:
			}
			value := make([]byte, w.valueSize)
			off := int(seq*8191) % (len(filler) - w.valueSize)
			copy(value[8:], filler[off:])
			binary.BigEndian.PutUint64(value, uint64(seq))
			n := seq
			seq++
			// Produce blocks while MaxBufferedRecords are in flight, which
			// is what keeps an unthrottled producer near capacity without
			// growing without bound.
			w.prod.Produce(context.Background(), &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err != nil {
					w.fail(fmt.Errorf("produce seq %d: %w", n, err))
					return
				}
				w.mu.Lock()
				w.acked.add(n)
				w.mu.Unlock()
				w.ackedN.Add(1)
				w.ackedBytes.Add(int64(len(r.Value)))
			})
		}
	}
}

func (w *workload) consume(ctx context.Context) {
	defer w.consuming.Done()
	for ctx.Err() == nil {
		fs := w.cons.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) {
			var ne net.Error
			switch {
			case errors.Is(err, context.Canceled):
			case kerr.IsRetriable(err) || errors.As(err, &ne):
				// The client retries these itself; a lost record would
				// still show as one never read back.
				w.retried.Add(1)
			default:
				w.fail(fmt.Errorf("fetch %s/%d: %w", topic, p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) < 8 {
				w.fail(fmt.Errorf("record %s/%d@%d: value of %d bytes", r.Topic, r.Partition, r.Offset, len(r.Value)))
				return
			}
			seq := int64(binary.BigEndian.Uint64(r.Value))
			w.mu.Lock()
			if !w.read.add(seq) {
				w.duplicates++
			}
			w.mu.Unlock()
			w.readN.Add(1)
		})
	}
}

// stopProducing ends the producer loop and waits for it; it may be called
// twice.
func (w *workload) stopProducing() {
	w.stopOnce.Do(func() { close(w.stopProduce) })
	w.producing.Wait()
}

// close stops both clients; it may be called twice. Records still buffered
// in the producer fail with kgo.ErrClientClosed.
func (w *workload) close() {
	w.closeOnce.Do(func() {
		w.stopProducing()
		w.cancel()
		w.consuming.Wait()
		w.prod.Close()
		w.cons.Close()
	})
}

// finish stops producing, waits for every produced record's answer, waits
// (bounded) until the consumer has read every acknowledged record, and
// fails t if any was not read back, read twice, or any request failed.
func (w *workload) finish(t *testing.T) {
	t.Helper()
	w.stopProducing()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.prod.Flush(ctx); err != nil {
		t.Errorf("flush producer: %v", err)
	}
	acked := w.ackedN.Load()
	if !waitFor(60*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.readN.Load()-w.duplicates >= acked
	}) {
		t.Errorf("consumer read %d of %d acknowledged records within 60s", w.readN.Load(), acked)
	}
	w.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	missing, firstMissing := 0, int64(-1)
	for i, word := range w.acked {
		for bit := 0; bit < 64; bit++ {
			n := int64(i*64 + bit)
			if word&(1<<bit) != 0 && !w.read.has(n) {
				if missing == 0 {
					firstMissing = n
				}
				missing++
			}
		}
	}
	t.Logf("workload %s: %d records acknowledged, %d read, %d duplicates, %d failures, %d retriable fetch errors",
		w.topic, acked, w.readN.Load(), w.duplicates, w.failures.Load(), w.retried.Load())
	if missing > 0 {
		t.Errorf("%d acknowledged records never read back (first: seq %d)", missing, firstMissing)
	}
	if w.duplicates > 0 {
		t.Errorf("%d records read more than once from an idempotent producer", w.duplicates)
	}
	if n := w.failures.Load(); n > 0 {
		t.Errorf("%d produce or fetch failures; first: %v", n, w.firstErr)
	}
}
