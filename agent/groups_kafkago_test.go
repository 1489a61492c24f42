package agent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaGoCommitsThroughRebalance: a kafka-go Reader commits every
// message it reads (CommitInterval 0) while a second member joins. Its
// heartbeat is slow, so it goes on reading and committing for a while
// after the group started PreparingRebalance; Kafka accepts those commits,
// so ReadMessage must not fail ("committing message: [27] Rebalance In
// Progress").
func TestKafkaGoCommitsThroughRebalance(t *testing.T) {
	const topic, groupID = "kgo-rebalance", "kafkago-committer"
	a := start(t, groupTestConfig(t), nil)
	admCl := a.client(t)
	adm := kadm.NewClient(admCl)
	createTopic(t, admCl, topic, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A producer keeps the reader busy across the rebalance.
	var wg sync.WaitGroup
	defer wg.Wait()
	produceCtx, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; produceCtx.Err() == nil; i++ {
			admCl.ProduceSync(produceCtx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte("v")})
			select {
			case <-tick.C:
			case <-produceCtx.Done():
			}
		}
	})

	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{a.KafkaAddr().String()}, GroupID: groupID, Topic: topic,
		StartOffset: kafkago.FirstOffset, HeartbeatInterval: 3 * time.Second, SessionTimeout: 10 * time.Second,
		RebalanceTimeout: 20 * time.Second, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var (
		mu       sync.Mutex
		readErr  error
		read     int
		readDone = make(chan struct{})
	)
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() {
		defer close(readDone)
		for {
			_, err := r.ReadMessage(readCtx)
			mu.Lock()
			if err != nil {
				if readCtx.Err() == nil {
					readErr = err
				}
				mu.Unlock()
				return
			}
			read++
			mu.Unlock()
		}
	}()
	state := func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return read, readErr
	}
	waitUntil(t, 30*time.Second, func() string {
		if n, _ := state(); n < 20 {
			return "the reader does not read"
		}
		return ""
	})
	// franz-go's range balancer shares kafka-go's protocol name.
	groupConsumer(t, a, groupID, topic, kgo.Balancers(kgo.RangeBalancer()))
	rebalanceAt := 0 // messages read when the group was seen PreparingRebalance
	waitUntil(t, 15*time.Second, func() string {
		if s := groupState(adm, groupID); s != "PreparingRebalance" {
			return "group " + s
		}
		rebalanceAt, _ = state()
		return ""
	})
	// The reader reads (and commits) on while the group prepares the
	// rebalance, then rejoins, and the group settles with both members.
	waitUntil(t, 30*time.Second, func() string {
		if n, err := state(); err == nil && n < rebalanceAt+20 {
			return "the reader does not read on while the group rebalances"
		}
		return ""
	})
	waitUntil(t, 30*time.Second, func() string {
		if _, err := state(); err != nil {
			return ""
		}
		if s := groupState(adm, groupID); s != "Stable" {
			return "group " + s
		}
		return ""
	})
	stopReading()
	<-readDone
	if readErr != nil && !errors.Is(readErr, context.Canceled) {
		t.Errorf("kafka-go ReadMessage across a rebalance: %v", readErr)
	}
}
