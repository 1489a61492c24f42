package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// eosChain is a consume-transform-produce pipeline of franz-go
// GroupTransactSessions, as a stream processor runs it (issue 29): stage
// s is consumer group chain-g<s> reading topic <prefix>-<s> at
// read_committed and writing each record's value, unchanged, to
// <prefix>-<s+1> in the transaction that commits its offsets. Each member
// has a transactional id of its own, quits after a few transactions, and
// is replaced by a new one; a member's error ends the test.
type eosChain struct {
	t        *testing.T
	seeds    func() []string
	prefix   string
	stages   int
	members  int // per stage
	static   bool
	balancer string // "cooperative-sticky" or "server" (KIP-848)
	seed     uint64
	// inputTime is how long the input takes to arrive.
	inputTime time.Duration

	mu     sync.Mutex
	failed []string
	txns   atomic.Int64 // transactions committed, all members
	joined atomic.Int64 // members started, all stages
	// unreleased counts joins refused UNRELEASED_INSTANCE_ID.
	unreleased atomic.Int64
	// coordinatorDeaths says the test kills coordinators: a member whose
	// End or poll fails for another reason than fencing then quits and
	// is replaced, as franz-go tells its users to (End's errors are not
	// retryable), instead of failing the test; gaveUp counts them.
	coordinatorDeaths bool
	gaveUp            atomic.Int64
	live              sync.Map
}

// topic is stage s's input topic (s == stages is the chain's output).
func (c *eosChain) topic(s int) string { return fmt.Sprintf("%s-%d", c.prefix, s) }

func (c *eosChain) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = append(c.failed, fmt.Sprintf(format, args...))
}

func (c *eosChain) failures() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.failed)
}

// run keeps every stage at c.members members until ctx ends, then closes
// them all.
func (c *eosChain) run(ctx context.Context) {
	var wg sync.WaitGroup
	for s := range c.stages {
		for slot := range c.members {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(c.seed, uint64(s*100+slot)))
				for generation := 0; ctx.Err() == nil; generation++ {
					c.member(ctx, rng, s, slot, generation)
				}
			})
		}
	}
	wg.Wait()
}

// member is one member's life: it joins stage s's group, runs a random
// number of transactions, and leaves.
func (c *eosChain) member(ctx context.Context, rng *rand.Rand, s, slot, generation int) {
	txnID := fmt.Sprintf("%s-s%d-%016x", c.prefix, s, rng.Uint64())
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.seeds()...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(60 * time.Second),
		kgo.SessionTimeout(20 * time.Second),
		kgo.ConsumerGroup(fmt.Sprintf("%s-g%d", c.prefix, s)),
		kgo.ConsumeTopics(c.topic(s)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(c.topic(s + 1)),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RetryTimeout(45 * time.Second),
	}
	switch c.balancer {
	case "server":
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	default:
		opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
	}
	if c.static && slot%2 == 0 {
		// The replacement takes over the slot's instance id, as a
		// restarted pod would.
		opts = append(opts, kgo.InstanceID(fmt.Sprintf("%s-s%d-slot%d", c.prefix, s, slot)))
	}
	logs := &memberLog{}
	c.live.Store(fmt.Sprintf("stage %d slot %d gen %d", s, slot, generation), logs)
	defer c.live.Delete(fmt.Sprintf("stage %d slot %d gen %d", s, slot, generation))
	opts = append(opts, kgo.WithLogger(kgo.BasicLogger(logs, kgo.LogLevelInfo, nil)))
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		c.fail("stage %d slot %d: new session: %v", s, slot, err)
		return
	}
	c.joined.Add(1)
	defer sess.Close()
	quota := 5 + rng.IntN(15)
	aborted := 0
	for done := 0; done < quota && ctx.Err() == nil; {
		pollCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := sess.PollRecords(pollCtx, 50)
		cancel()
		if ctx.Err() != nil {
			return
		}
		var fatal error
		fetches.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fatal = fmt.Errorf("fetch %s-%d: %w", topic, p, err)
			}
		})
		if fatal != nil {
			if errors.Is(fatal, kerr.UnreleasedInstanceID) {
				// franz-go's KIP-848 leave of a static member names no
				// instance id, which Kafka refuses as an invalid request
				// too: the instance stays held until its session times
				// out, and a replacement must retry its join meanwhile,
				// as a restarted pod would.
				c.unreleased.Add(1)
				time.Sleep(time.Second)
				return
			}
			if c.quitOn(fatal) {
				return
			}
			c.fail("stage %d slot %d gen %d (%s): %v\n%s", s, slot, generation, txnID, fatal, logs.tail())
			return
		}
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				recs = append(recs, r)
			}
		})
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			c.fail("stage %d slot %d gen %d (%s): begin: %v\n%s", s, slot, generation, txnID, err, logs.tail())
			return
		}
		var produceErr atomic.Pointer[error]
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					produceErr.CompareAndSwap(nil, &err)
				}
			})
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if c.quitOn(err) {
				return
			}
			c.fail("stage %d slot %d gen %d (%s): end after %d transactions: %v\n%s", s, slot, generation, txnID, done, err, logs.tail())
			return
		}
		if p := produceErr.Load(); p != nil && isFencing(*p) {
			c.fail("stage %d slot %d gen %d (%s): produce: %v\n%s", s, slot, generation, txnID, *p, logs.tail())
			return
		}
		if committed {
			done++
			aborted = 0
			c.txns.Add(1)
		} else if aborted++; aborted == 50 {
			// Every End aborting means the member is fenced or its
			// assignment revoked for good.
			c.fail("stage %d slot %d gen %d (%s): 50 aborts in a row\n%s", s, slot, generation, txnID, logs.tail())
		}
	}
}

// quitOn reports whether a member that met err quits (and is replaced)
// rather than failing the test: only when coordinators die, and never on
// fencing, which is what the chain must not see.
func (c *eosChain) quitOn(err error) bool {
	if !c.coordinatorDeaths || isFencing(err) {
		return false
	}
	c.gaveUp.Add(1)
	c.t.Logf("a member quits after a coordinator error: %v", err)
	return true
}

// memberLog keeps the last lines a member's client logged, for the
// failure message.
type memberLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *memberLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	if len(l.lines) > 200 {
		l.lines = l.lines[len(l.lines)-200:]
	}
	return len(p), nil
}

func (l *memberLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "")
}

// isFencing reports an error that says the producer lost its epoch.
func isFencing(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		strings.Contains(err.Error(), "not in a transaction")
}

// runEOSChain produces n inputs to the chain's first topic, runs the
// chain until its last topic holds n records at read_committed (or
// within bound), calling during every second while it runs, and checks
// that every input is there exactly once.
func runEOSChain(t *testing.T, c *eosChain, n int, partitions int32, create func(topic string), bound time.Duration, during func(elapsed time.Duration)) {
	t.Helper()
	for s := 0; s <= c.stages; s++ {
		create(c.topic(s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	in := newKgo(t, c.seeds()[0], kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RetryTimeout(45*time.Second))
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("%06d", i)
	}
	// The input arrives over about rate's time, so that members come and
	// go while records flow.
	produced := make(chan error, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		perTick := max(1, n/int(c.inputTime/(50*time.Millisecond)))
		for i := 0; i < n; {
			select {
			case <-ctx.Done():
				produced <- ctx.Err()
				return
			case <-tick.C:
			}
			for end := min(n, i+perTick); i < end; i++ {
				in.Produce(ctx, &kgo.Record{Topic: c.topic(0), Value: []byte(want[i])}, func(_ *kgo.Record, err error) {
					if err != nil {
						c.fail("input %s: %v", want[i], err)
					}
				})
			}
		}
		produced <- in.Flush(ctx)
	}()
	chainCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.run(chainCtx) }()
	defer func() { stop(); <-done }()

	out := newKgo(t, c.seeds()[0], kgo.SeedBrokers(c.seeds()...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeTopics(c.topic(c.stages)), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	began := time.Now()
	lastTick := began
	progressed, dumped := began, false
	for len(seen) < n {
		if f := c.failures(); len(f) > 0 {
			t.Fatalf("seed %d: %d member failures, first:\n%s", c.seed, len(f), f[0])
		}
		if ctx.Err() != nil {
			t.Fatalf("seed %d: %d of %d records out after %v; %d transactions, %d members\n%s", c.seed, len(seen), n, bound, c.txns.Load(), c.joined.Load(), c.state())
		}
		pollCtx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := out.PollFetches(pollCtx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			progressed = time.Now()
		})
		if time.Since(progressed) > 30*time.Second && !dumped && len(seen) > 0 {
			dumped = true
			t.Logf("no progress for 30s at %d records:\n%s", len(seen), c.state())
		}
		if during != nil && time.Since(lastTick) >= time.Second {
			lastTick = time.Now()
			during(time.Since(began))
		}
	}
	stop()
	<-done
	if err := <-produced; err != nil {
		t.Fatalf("produce the input: %v", err)
	}
	if f := c.failures(); len(f) > 0 {
		t.Fatalf("seed %d: %d member failures, first %q", c.seed, len(f), f[0])
	}
	// Read a little longer: a duplicate committed late would show now.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		pollCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		out.PollFetches(pollCtx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		cancel()
	}
	var dup, missing []string
	for _, v := range want {
		switch seen[v] {
		case 0:
			missing = append(missing, v)
		case 1:
		default:
			dup = append(dup, v)
		}
	}
	if len(dup) > 0 || len(missing) > 0 || len(seen) != n {
		t.Fatalf("seed %d: %d distinct out of %d; %d duplicated (first %q), %d missing (first %q)",
			c.seed, len(seen), n, len(dup), dup[:min(len(dup), 5)], len(missing), missing[:min(len(missing), 5)])
	}
	t.Logf("seed %d: %d records through %d stages exactly once in %v; %d transactions, %d members, %d joins refused UNRELEASED_INSTANCE_ID, %d members quit after a coordinator error",
		c.seed, n, c.stages, time.Since(began).Round(time.Millisecond), c.txns.Load(), c.joined.Load(), c.unreleased.Load(), c.gaveUp.Load())
}

// state describes where the chain stands, for a failure message: each
// stage's committed offsets against its input's stable and high ends, the
// producers with a transaction open on its partitions, and its group.
func (c *eosChain) state() string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.seeds()...))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for s := 0; s < c.stages; s++ {
		topic, group := c.topic(s), fmt.Sprintf("%s-g%d", c.prefix, s)
		ends, _ := adm.ListEndOffsets(ctx, topic)
		stable, _ := adm.ListCommittedOffsets(ctx, topic)
		committed, _ := adm.FetchOffsets(ctx, group)
		fmt.Fprintf(&b, "stage %d (%s):", s, topic)
		ends.Each(func(o kadm.ListedOffset) {
			st, _ := stable.Lookup(topic, o.Partition)
			co, _ := committed.Lookup(topic, o.Partition)
			fmt.Fprintf(&b, " p%d committed %d stable %d end %d;", o.Partition, co.At, st.Offset, o.Offset)
		})
		b.WriteString("\n")
		producers, _ := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: nil})
		producers.EachProducer(func(p kadm.DescribedProducer) {
			if p.CurrentTxnStartOffset >= 0 {
				fmt.Fprintf(&b, "  open: p%d producer %d epoch %d from offset %d\n", p.Partition, p.ProducerID, p.ProducerEpoch, p.CurrentTxnStartOffset)
			}
		})
		if dg, err := adm.DescribeConsumerGroups(ctx, group); err == nil {
			for _, g := range dg {
				fmt.Fprintf(&b, "  group %s epoch %d: %d members\n", g.State, g.Epoch, len(g.Members))
				for _, m := range g.Members {
					fmt.Fprintf(&b, "    %s epoch %d assigned %v\n", m.MemberID, m.MemberEpoch, m.Assignment)
				}
			}
		}
		if dg, err := adm.DescribeGroups(ctx, group); err == nil {
			for _, g := range dg {
				fmt.Fprintf(&b, "  classic %s %s: %d members\n", g.State, g.Protocol, len(g.Members))
			}
		}
	}
	c.live.Range(func(k, v any) bool {
		l := v.(*memberLog)
		l.mu.Lock()
		tail := l.lines[max(0, len(l.lines)-25):]
		fmt.Fprintf(&b, "---- %s\n%s", k, strings.Join(tail, ""))
		l.mu.Unlock()
		return true
	})
	return b.String()
}

// createTopicsOn returns a create function for runEOSChain over adm.
func createTopicsOn(t *testing.T, adm *kadm.Client, partitions int32) func(string) {
	return func(topic string) { createTopic(t, adm, topic, partitions, nil) }
}

// chainArgs are the agents' settings for the chain. franz-go's KIP-848
// leave of a static member names no instance id, which Kafka refuses as
// an invalid request too, so the instance stays held until the member's
// session times out (group.consumer.session.timeout.ms) and its
// replacement is refused UNRELEASED_INSTANCE_ID until then: a session of
// 6 s, not Kafka's default 45, keeps a slot's turnover from stalling the
// chain.
var chainArgs = []string{"--group-initial-rebalance-delay=100ms", "--group-consumer-session-timeout=6s",
	"--group-consumer-heartbeat-interval=500ms"}

// chainCases are the balancers and static-membership choices every chain
// test runs.
var chainCases = []struct {
	balancer string
	static   bool
}{{"cooperative-sticky", false}, {"cooperative-sticky", true}, {"server", false}, {"server", true}}

// TestEOSChainOneAgent (issue 29): the three-stage chain on one agent,
// with each balancer and with and without static members, moves every
// record exactly once and no member is fenced; under transaction version
// 2 (franz-go's default against Strata) and with version 1 pinned by the
// agent (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn without bumps).
func TestEOSChainOneAgent(t *testing.T) {
	for _, tv := range []string{"2", "1"} {
		t.Run("tv"+tv, func(t *testing.T) {
			a := testagent.Start(t, testagent.Options{ExtraArgs: append(slices.Clone(chainArgs), "--transaction-version="+tv)})
			adm := newAdmin(t, a.Addr())
			for _, tc := range chainCases {
				t.Run(fmt.Sprintf("%s/static=%v", tc.balancer, tc.static), func(t *testing.T) {
					c := &eosChain{t: t, seeds: func() []string { return []string{a.Addr()} },
						prefix: fmt.Sprintf("chain%d", rand.IntN(1e6)), stages: 3, members: 3,
						static: tc.static, balancer: tc.balancer, seed: rand.Uint64(), inputTime: 15 * time.Second}
					runEOSChain(t, c, 1500, 3, createTopicsOn(t, adm, 3), 3*time.Minute, nil)
				})
			}
		})
	}
}

// TestEOSChainCoordinatorSIGKILL (issue 29): the chain on three agents,
// with the agent that coordinates the groups and transactions SIGKILLed
// a few seconds in and started again a few seconds later. Every record
// still moves exactly once and no member is fenced; the groups move with
// their partition of __consumer_offsets and keep their members.
func TestEOSChainCoordinatorSIGKILL(t *testing.T) {
	cl := startProcCluster(t, 3, "file://"+t.TempDir(), nil, append([]string{"--transaction-state-partitions=1",
		"--offsets-topic-partitions=1"}, chainArgs...)...)
	for _, tc := range chainCases {
		t.Run(fmt.Sprintf("%s/static=%v", tc.balancer, tc.static), func(t *testing.T) {
			c := &eosChain{t: t, seeds: cl.seeds, prefix: fmt.Sprintf("kchain%d", rand.IntN(1e6)), stages: 3, members: 2,
				static: tc.static, balancer: tc.balancer, seed: rand.Uint64(), inputTime: 15 * time.Second, coordinatorDeaths: true}
			victim := -1
			var killedAt time.Duration
			during := func(elapsed time.Duration) {
				switch {
				case victim < 0 && elapsed >= 4*time.Second:
					victim, _ = cl.leaderIndex("__transaction_state", 0, -1, []int{0, 1, 2})
					t.Logf("SIGKILL agent %d, the coordinator, at %v", victim, elapsed.Round(time.Millisecond))
					cl.agents[victim].Kill()
					killedAt = elapsed
				case victim >= 0 && killedAt > 0 && elapsed >= killedAt+4*time.Second:
					t.Logf("start agent %d again at %v", victim, elapsed.Round(time.Millisecond))
					cl.agents[victim].Restart(t)
					killedAt = 0
				}
			}
			create := func(topic string) { cl.createTopic(topic, 3, 3, nil) }
			runEOSChain(t, c, 1500, 3, create, 4*time.Minute, during)
		})
	}
}
