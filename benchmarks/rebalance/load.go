package rebalance

// The load a join happens under (Config.LoadRate): an acks=all producer
// of fixed-rate records, round-robin over the topic's partitions, from
// before the new agent starts until the placement is balanced.

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// load is a running producer.
type load struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu            sync.Mutex
	acked, failed int64
	firstErr      error
}

// startLoad produces rate records a second of size bytes to topic until
// stop; rate 0 produces nothing.
func startLoad(seeds []string, topic string, rate, size int) (*load, error) {
	l := &load{done: make(chan struct{})}
	if rate <= 0 {
		close(l.done)
		return l, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(time.Millisecond), kgo.RecordDeliveryTimeout(time.Minute))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cl, l.cancel = cl, cancel
	value := make([]byte, size)
	go func() {
		defer close(l.done)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				l.mu.Lock()
				defer l.mu.Unlock()
				switch {
				case err == nil:
					l.acked++
				case ctx.Err() == nil:
					l.failed++
					if l.firstErr == nil {
						l.firstErr = err
					}
				}
			})
		}
	}()
	return l, nil
}

// stop ends the load, waits for what is in flight (up to a few seconds)
// and returns the records acknowledged and failed.
func (l *load) stop() (acked, failed int64, firstErr error) {
	if l.cl != nil {
		l.cancel()
		<-l.done
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l.cl.Flush(ctx)
		cancel()
		l.cl.Close()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.failed, l.firstErr
}
