package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// churnLedger records, per partition, what the group committed and which
// member processed each record, and flags a record processed again after
// a commit past it succeeded.
type churnLedger struct {
	mu         sync.Mutex
	committed  map[int32]int64            // partition -> highest committed offset
	processed  map[int32]map[int64]string // partition -> offset -> member
	problems   []string
	commitErrs []string
	commits    int
}

func (l *churnLedger) process(member string, r *kgo.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Offset < l.committed[r.Partition] {
		l.problems = append(l.problems, fmt.Sprintf("%s processed %d@%d after offset %d was committed (first processed by %s)",
			member, r.Partition, r.Offset, l.committed[r.Partition], l.processed[r.Partition][r.Offset]))
	}
	if l.processed[r.Partition] == nil {
		l.processed[r.Partition] = map[int64]string{}
	}
	if _, ok := l.processed[r.Partition][r.Offset]; !ok {
		l.processed[r.Partition][r.Offset] = member
	}
}

// commitDone is an OffsetCommit's outcome, from a revoke callback or an
// autocommit.
func (l *churnLedger) commitDone(member, how string, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		return // an autocommit in flight when the member's client closed
	}
	if err != nil {
		l.commitErrs = append(l.commitErrs, fmt.Sprintf("%s %s: %v", member, how, err))
		return
	}
	offsets := map[int32]int64{}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			offsets[rp.Partition] = rp.Offset
		}
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				l.commitErrs = append(l.commitErrs, fmt.Sprintf("%s %s of partition %d: %v", member, how, rp.Partition, err))
				continue
			}
			l.commits++
			l.committed[rp.Partition] = max(l.committed[rp.Partition], offsets[rp.Partition])
		}
	}
}

// TestCooperativeCommitInRevokeUnderChurn: three franz-go members of a
// cooperative-sticky group, members leaving and joining while a producer
// runs, each committing what it processed in OnPartitionsRevoked (and by
// autocommit of marked records). Every commit succeeds, no record is
// processed again after a commit past it succeeded, and every produced
// record is processed. Before Strata accepted commits in
// PreparingRebalance, the revoke commits failed with REBALANCE_IN_PROGRESS
// ("unable to commit in revoked").
func TestCooperativeCommitInRevokeUnderChurn(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	const topic, groupID, partitions = "churn", "churners", 6
	a := start(t, groupTestConfig(t), nil)
	admCl := a.client(t)
	adm := kadm.NewClient(admCl)
	createTopic(t, admCl, topic, partitions, nil)
	ledger := &churnLedger{committed: map[int32]int64{}, processed: map[int32]map[int64]string{}}

	// The producer writes to random partitions until the churn is over.
	producer := a.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceCtx, stopProducing := context.WithCancel(context.Background())
	produced := make(chan map[int32]int64, 1) // partition -> records produced
	go func() {
		counts := map[int32]int64{}
		defer func() { produced <- counts }()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for produceCtx.Err() == nil {
			p := int32(rng.IntN(partitions))
			if err := producer.ProduceSync(produceCtx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				if produceCtx.Err() == nil {
					t.Errorf("produce: %v", err)
				}
				return
			}
			counts[p]++
			select {
			case <-tick.C:
			case <-produceCtx.Done():
			}
		}
	}()
	defer stopProducing()

	type churner struct {
		name string
		stop func()
	}
	newMember := func(name string) churner {
		var cl *kgo.Client
		cl, err := kgo.NewClient(kgo.SeedBrokers(a.KafkaAddr().String()), kgo.ConsumerGroup(groupID), kgo.ConsumeTopics(topic),
			kgo.ClientID(name), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.BlockRebalanceOnPoll(),
			kgo.AutoCommitMarks(), kgo.AutoCommitInterval(300*time.Millisecond),
			kgo.AutoCommitCallback(func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				ledger.commitDone(name, "autocommit", req, resp, err)
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
				// CommitMarkedOffsets, with the outcome kept.
				if marked := cl.MarkedOffsets(); len(marked) > 0 {
					cl.CommitOffsetsSync(ctx, marked, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
						ledger.commitDone(name, "commit in revoked", req, resp, err)
					})
				}
			}),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(100*time.Millisecond),
			kgo.RebalanceTimeout(10*time.Second), kgo.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 100)
				fs.EachRecord(func(r *kgo.Record) {
					ledger.process(name, r)
					cl.MarkCommitRecords(r)
				})
				cl.AllowRebalance()
			}
		}()
		var once sync.Once
		stop := func() { once.Do(func() { cancel(); <-done; cl.Close() }) }
		t.Cleanup(stop)
		return churner{name, stop}
	}
	processedCount := func() int {
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		n := 0
		for _, m := range ledger.processed {
			n += len(m)
		}
		return n
	}
	// settle waits for the group to be Stable with every partition owned
	// once by n members, and for consumption to move on.
	settle := func(n int) {
		t.Helper()
		waitAssigned(t, adm, groupID, topic, partitions, n)
		before := processedCount()
		waitUntil(t, 20*time.Second, func() string {
			if processedCount() < before+50 {
				return "consumption does not move on"
			}
			return ""
		})
	}

	var members []churner
	for i := range 3 {
		members = append(members, newMember(fmt.Sprintf("m%d", i)))
		settle(len(members))
	}
	// Churn: the oldest member leaves (its partitions are revoked), then a
	// new one joins (partitions are revoked from the others for it).
	for i := 3; i < 7; i++ {
		members[0].stop()
		members = members[1:]
		settle(len(members))
		members = append(members, newMember(fmt.Sprintf("m%d", i)))
		settle(len(members))
	}
	stopProducing()
	counts := <-produced
	waitUntil(t, 30*time.Second, func() string {
		ledger.mu.Lock()
		defer ledger.mu.Unlock()
		for p, n := range counts {
			if got := int64(len(ledger.processed[p])); got < n {
				return fmt.Sprintf("partition %d: %d of %d records processed", p, got, n)
			}
		}
		return ""
	})
	for _, m := range members {
		m.stop()
	}
	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	total := int64(0)
	for _, n := range counts {
		total += n
	}
	t.Logf("%d records produced, %d partition commits succeeded", total, ledger.commits)
	if len(ledger.commitErrs) > 0 {
		t.Errorf("%d commits failed, first: %s", len(ledger.commitErrs), ledger.commitErrs[:min(5, len(ledger.commitErrs))])
	}
	if len(ledger.problems) > 0 {
		t.Errorf("%d records processed after they were committed, first: %s", len(ledger.problems), ledger.problems[:min(5, len(ledger.problems))])
	}
	if ledger.commits < partitions {
		t.Errorf("only %d partition commits succeeded", ledger.commits)
	}
}
