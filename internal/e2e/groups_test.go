package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// groupAgentArgs make groups rebalance quickly and keep __consumer_offsets
// small.
var groupAgentArgs = []string{"--group-initial-rebalance-delay=100ms", "--offsets-topic-partitions=3",
	"--group-consumer-heartbeat-interval=200ms", "--group-consumer-session-timeout=6s"}

// produceN writes n records "p<partition>-<i>" to each partition of topic.
func produceN(t *testing.T, addr, topic string, partitions int32, n int) {
	t.Helper()
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctxT(t, opTimeout), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// TestGroupCommitSurvivesSIGKILL: a group consumer commits as it goes; the
// agent is SIGKILLed and restarted part-way. The consumer resumes from its
// last committed offsets: no record is skipped, and the only records read
// twice are those after the last commit before the kill. Once with the
// classic protocol and once with KIP-848; the restarted coordinator
// restores both groups from their records.
func TestGroupCommitSurvivesSIGKILL(t *testing.T) {
	t.Run("classic", func(t *testing.T) { commitSurvivesSIGKILL(t) })
	t.Run("kip848", func(t *testing.T) { commitSurvivesSIGKILL(t, kgo.ServerSideBalancer()) })
}

func commitSurvivesSIGKILL(t *testing.T, opts ...kgo.Opt) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: groupAgentArgs})
	const partitions, perPartition = 3, 100
	createTopic(t, newAdmin(t, a.Addr()), "commits", partitions, nil)
	produceN(t, a.Addr(), "commits", partitions, perPartition)

	cl := newKgo(t, a.Addr(), append([]kgo.Opt{kgo.ConsumerGroup("resumer"), kgo.ConsumeTopics("commits"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond)},
		opts...)...)
	seen := map[int32][]int64{}
	committed := map[int32]int64{} // next offset per partition after the last successful commit
	var atKill map[int32]int64     // committed when the agent was killed
	read := func() int {
		n := 0
		for _, offs := range seen {
			n += len(offs)
		}
		return n
	}
	deadline := time.Now().Add(90 * time.Second)
	for uniqueOffsets(seen) < partitions*perPartition {
		if time.Now().After(deadline) {
			t.Fatalf("read %d distinct records of %d in 90s", uniqueOffsets(seen), partitions*perPartition)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fetches := cl.PollRecords(ctx, 10)
		cancel()
		next := map[int32]int64{}
		fetches.EachRecord(func(r *kgo.Record) {
			seen[r.Partition] = append(seen[r.Partition], r.Offset)
			next[r.Partition] = r.Offset + 1
		})
		if len(next) == 0 {
			continue
		}
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		err := cl.CommitUncommittedOffsets(ctx)
		cancel()
		if err == nil {
			for p, o := range next {
				committed[p] = o
			}
		}
		if atKill == nil && read() >= 90 {
			atKill = cloneOffsets(committed)
			a.Kill()
			a.Restart(t)
		}
	}
	if atKill == nil {
		t.Fatal("the agent was never killed")
	}
	for p := range int32(partitions) {
		offs := slices.Clone(seen[p])
		slices.Sort(offs)
		for i := 1; i < len(offs); i++ {
			if offs[i] == offs[i-1] && offs[i] < atKill[p] {
				t.Errorf("partition %d: offset %d read twice although it was committed (%d) before the kill", p, offs[i], atKill[p])
			}
		}
		for want := int64(0); want < perPartition; want++ {
			if !slices.Contains(offs, want) {
				t.Errorf("partition %d: offset %d never read", p, want)
			}
		}
	}
}

func cloneOffsets(m map[int32]int64) map[int32]int64 {
	out := make(map[int32]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func uniqueOffsets(seen map[int32][]int64) int {
	n := 0
	for _, offs := range seen {
		u := map[int64]bool{}
		for _, o := range offs {
			u[o] = true
		}
		n += len(u)
	}
	return n
}

// TestGroupsOtherClients: sarama and segmentio/kafka-go consumer groups of
// two members each consume a topic completely, each record once.
func TestGroupsOtherClients(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: groupAgentArgs})
	t.Run("sarama", func(t *testing.T) {
		consumeAsGroup(t, a.Addr(), "sarama-group", func(ctx context.Context, i int, got *collector) {
			cfg := saramaConfig()
			cfg.ClientID = fmt.Sprintf("sarama-member-%d", i)
			cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
			cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
			g, err := sarama.NewConsumerGroup([]string{a.Addr()}, "sarama-g", cfg)
			if err != nil {
				t.Error(err)
				return
			}
			defer g.Close()
			for ctx.Err() == nil && !got.full() {
				if err := g.Consume(ctx, []string{"sarama-group"}, saramaHandler{got}); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) && ctx.Err() == nil {
					t.Errorf("sarama consume: %v", err)
					return
				}
			}
		})
	})
	t.Run("kafka-go", func(t *testing.T) {
		consumeAsGroup(t, a.Addr(), "kafkago-group", func(ctx context.Context, _ int, got *collector) {
			r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{a.Addr()}, GroupID: "kafkago-g", Topic: "kafkago-group",
				StartOffset: kafkago.FirstOffset, HeartbeatInterval: 200 * time.Millisecond, SessionTimeout: 6 * time.Second,
				MaxWait: 200 * time.Millisecond})
			defer r.Close()
			for !got.full() {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					return
				}
				got.add(int32(m.Partition), string(m.Value))
			}
		})
	})
}

// consumeAsGroup fills a 4-partition topic, runs two group members (member
// consumes into got until it is full or ctx ends) and checks that every
// record was read once, in order per partition.
func consumeAsGroup(t *testing.T, addr, topic string, member func(ctx context.Context, i int, got *collector)) {
	t.Helper()
	const partitions, perPartition = 4, 25
	createTopic(t, newAdmin(t, addr), topic, partitions, nil)
	produceN(t, addr, topic, partitions, perPartition)
	got := newCollector(partitions * perPartition)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { member(ctx, i, got) })
	}
	got.wait(ctx)
	cancel()
	wg.Wait()
	got.check(t, partitions, perPartition)
}

type saramaHandler struct{ got *collector }

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.got.add(m.Partition, string(m.Value))
		s.MarkMessage(m, "")
		if h.got.full() {
			return nil
		}
	}
	return nil
}

// collector gathers what a group consumed, from several goroutines.
type collector struct {
	mu    sync.Mutex
	want  int
	vals  map[int32][]string
	done  chan struct{}
	count int
}

func newCollector(want int) *collector {
	return &collector{want: want, vals: map[int32][]string{}, done: make(chan struct{})}
}

func (c *collector) add(p int32, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.vals[p] = append(c.vals[p], v)
	c.count++
	if c.count == c.want {
		close(c.done)
	}
}

func (c *collector) full() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *collector) wait(ctx context.Context) {
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}

// check: every partition read in order, each record exactly once.
func (c *collector) check(t *testing.T, partitions, perPartition int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range int32(partitions) {
		var want []string
		for i := range perPartition {
			want = append(want, fmt.Sprintf("p%d-%d", p, i))
		}
		if !slices.Equal(c.vals[p], want) {
			t.Errorf("partition %d: read %d records %q..., want %d in order", p, len(c.vals[p]), head(c.vals[p]), perPartition)
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestKcatGroup: kcat -G (librdkafka's balanced consumer, classic protocol)
// reads a topic completely as a group member and commits what it read, so
// the group's committed offsets end at the log ends.
func TestKcatGroup(t *testing.T) {
	kcat := kcatPath(t)
	a := testagent.Start(t, testagent.Options{ExtraArgs: groupAgentArgs})
	const partitions, perPartition = 3, 20
	adm := newAdmin(t, a.Addr())
	createTopic(t, adm, "kcat-group", partitions, nil)
	produceN(t, a.Addr(), "kcat-group", partitions, perPartition)
	out := runKcat(t, kcat, nil, "-b", a.Addr(), "-G", "kcat-g", "-o", "beginning", "-e", "-q",
		"-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100", "-f", "%p %s\n", "kcat-group")
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		got[line] = true
	}
	for p := range partitions {
		for i := range perPartition {
			if line := fmt.Sprintf("%d p%d-%d", p, p, i); !got[line] {
				t.Errorf("kcat -G did not print %q", line)
			}
		}
	}
	committed, err := adm.FetchOffsets(ctxT(t, opTimeout), "kcat-g")
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		t.Fatalf("fetch committed offsets: %v", err)
	}
	for p := range int32(partitions) {
		if o, ok := committed.Lookup("kcat-group", p); !ok || o.At != perPartition {
			t.Errorf("partition %d: committed %+v, want %d", p, o, perPartition)
		}
	}
}
