package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// Crash test settings.
const (
	crashTopic      = "crash"
	crashPartitions = 3
	crashRounds     = 2         // SIGKILL + restart this many times
	crashAcksPhase  = 3000      // acknowledged records between kills
	crashMaxRecords = 2_000_000 // stop producing after this many, whatever happens
	// The producer is paced so the run lasts seconds, not milliseconds, on
	// a fast agent: at most crashBurst records per crashTick.
	crashTick        = time.Millisecond
	crashBurst       = 20
	crashDelivery    = 60 * time.Second
	crashPhaseMin    = time.Second // and at least this long between kills
	crashReportLimit = 10          // problems of each kind printed in full
)

// TestCrashIdempotentProducer: an idempotent acks=all producer writes
// sequence-numbered records while the agent is SIGKILLed and restarted on
// the same ports and data dir. Afterwards every acknowledged record is in
// the log exactly once, and each partition holds its records in the order
// they were produced, with no duplicates.
func TestCrashIdempotentProducer(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--log-flush", "always"}})
	createTopic(t, newAdmin(t, a.Addr()), crashTopic, crashPartitions, nil)

	cl := newKgo(t, a.Addr(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(crashDelivery),
		kgo.RecordRetries(1<<20),
		kgo.RetryTimeout(crashDelivery),
		kgo.ProducerLinger(time.Millisecond),
	)

	var (
		mu       sync.Mutex
		acked    = map[int]bool{} // seq -> acknowledged
		failed   = map[int]error{}
		ackCount int
	)
	ackedSoFar := func() int { mu.Lock(); defer mu.Unlock(); return ackCount }

	stop := make(chan struct{})
	// produceCtx is cancelled only when the test gives up, to unblock a
	// Produce waiting for buffer space while the agent is down.
	produceCtx, cancelProduce := context.WithCancel(context.Background())
	defer cancelProduce()
	var produced int
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopProducer := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	// If the test ends early (a failed restart), the producer still stops
	// and is joined; this runs before the client is closed.
	t.Cleanup(func() { cancelProduce(); stopProducer() })
	wg.Add(1)
	go func() { // owned here: joined before verification
		defer wg.Done()
		pace := time.NewTicker(crashTick)
		defer pace.Stop()
		for seq := 0; seq < crashMaxRecords; seq++ {
			if seq%crashBurst == 0 {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
			}
			r := &kgo.Record{
				Topic:     crashTopic,
				Partition: int32(seq % crashPartitions),
				Key:       []byte(fmt.Sprintf("k-%08d", seq)),
				Value:     []byte(fmt.Sprintf("rec-%08d", seq)),
			}
			// Produce blocks once MaxBufferedRecords are buffered, which
			// throttles this loop while the agent is down.
			cl.Produce(produceCtx, r, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed[seq] = err
					return
				}
				acked[seq] = true
				ackCount++
			})
			produced = seq + 1
		}
	}()

	waitAcks := func(target int, phase string) {
		t.Helper()
		start := time.Now()
		deadline := start.Add(conditionLimit)
		ticker := time.NewTicker(conditionPoll)
		defer ticker.Stop()
		for ackedSoFar() < target || time.Since(start) < crashPhaseMin {
			if time.Now().After(deadline) {
				cancelProduce()
				stopProducer()
				t.Fatalf("%s: %d acks, want %d within %v", phase, ackedSoFar(), target, conditionLimit)
			}
			<-ticker.C
		}
	}

	target := crashAcksPhase
	for round := 1; round <= crashRounds; round++ {
		waitAcks(target, fmt.Sprintf("before kill %d", round))
		before := ackedSoFar()
		a.Kill() // produce requests are in flight: the loop never pauses
		t.Logf("round %d: killed with %d acked", round, before)
		a.Restart(t)
		target = ackedSoFar() + crashAcksPhase
	}
	waitAcks(target, "after last restart")
	stopProducer()
	flushCtx, cancel := context.WithTimeout(context.Background(), crashDelivery+10*time.Second)
	defer cancel()
	if err := cl.Flush(flushCtx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	mu.Lock()
	defer mu.Unlock()
	t.Logf("produced %d, acknowledged %d, failed %d", produced, len(acked), len(failed))
	for seq, err := range failed {
		t.Logf("one failed record: seq %d: %v", seq, err)
		break
	}

	got := consumeKgo(t, a.Addr(), crashTopic)
	present := map[int]int64{} // seq -> offset of its first copy
	problems := 0
	report := func(format string, args ...any) {
		t.Helper()
		if problems < crashReportLimit {
			t.Errorf(format, args...)
		}
		problems++
	}
	for p := int32(0); p < crashPartitions; p++ {
		last := -1
		for _, r := range got[p] {
			var seq int
			if _, err := fmt.Sscanf(string(r.Value), "rec-%08d", &seq); err != nil {
				t.Fatalf("partition %d offset %d: value %q: %v", p, r.Offset, r.Value, err)
			}
			if want := fmt.Sprintf("k-%08d", seq); string(r.Key) != want {
				report("partition %d offset %d: key %q, want %q", p, r.Offset, r.Key, want)
			}
			if seq%crashPartitions != int(p) {
				report("partition %d offset %d: seq %d belongs to partition %d", p, r.Offset, seq, seq%crashPartitions)
			}
			if first, dup := present[seq]; dup {
				report("partition %d offset %d: seq %d is a duplicate of offset %d", p, r.Offset, seq, first)
				continue
			}
			if seq < last {
				report("partition %d offset %d: seq %d after %d: out of order", p, r.Offset, seq, last)
			}
			present[seq] = r.Offset
			last = max(last, seq)
		}
		t.Logf("partition %d: %d records, last seq %d", p, len(got[p]), last)
	}
	missing := 0
	for seq := range acked {
		if _, ok := present[seq]; !ok {
			if missing < crashReportLimit {
				t.Errorf("acknowledged record seq %d (partition %d) is missing", seq, seq%crashPartitions)
			}
			missing++
		}
	}
	if problems > crashReportLimit {
		t.Errorf("%d ordering/duplicate problems in all (first %d shown)", problems, crashReportLimit)
	}
	if missing > 0 {
		t.Errorf("%d acknowledged records missing of %d", missing, len(acked))
	}
	t.Logf("log holds %d records over %d partitions", len(present), crashPartitions)
}
