package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testagent"
)

// clusterArgs make failures visible in seconds.
var clusterArgs = testagent.FastClusterArgs

// procCluster is agents as processes sharing one store.
type procCluster struct {
	t      *testing.T
	agents []*testagent.Agent
	direct []*kgo.Client // one per agent, for requests to that agent itself
}

// startProcCluster starts n agents with ids 0..n-1 on store, each joining
// the ones before it; a restarted agent joins all the others.
func startProcCluster(t *testing.T, n int, store string, env []string, extra ...string) *procCluster {
	t.Helper()
	return startProcClusterWith(t, n, store, testagent.Options{Env: env}, extra...)
}

// startProcClusterWith is startProcCluster with more of each agent's
// options (its ExtraArgs are replaced).
func startProcClusterWith(t *testing.T, n int, store string, base testagent.Options, extra ...string) *procCluster {
	t.Helper()
	return startProcClusterEach(t, n, store, func(int) testagent.Options { return base }, extra...)
}

// startProcClusterEach is startProcClusterWith with options of its own for
// agent i (their ExtraArgs are replaced).
func startProcClusterEach(t *testing.T, n int, store string, options func(i int) testagent.Options, extra ...string) *procCluster {
	t.Helper()
	c := &procCluster{t: t}
	for i := range n {
		args := append(slices.Clone(clusterArgs), "--store", store, "--agent-id", fmt.Sprint(i))
		args = append(args, extra...)
		var join []string
		for _, a := range c.agents {
			join = append(join, a.GossipAddr())
		}
		if len(join) > 0 {
			args = append(args, "--join", strings.Join(join, ","))
		}
		opts := options(i)
		opts.ExtraArgs = args
		a := testagent.Start(t, opts)
		c.agents = append(c.agents, a)
		// Kafka 3.0's versions name topics (later Produce versions use ids).
		c.direct = append(c.direct, newKgo(t, a.Addr(), kgo.MaxVersions(kversion.V3_0_0())))
	}
	for i, a := range c.agents {
		var others []string
		for j, b := range c.agents {
			if j != i {
				others = append(others, b.GossipAddr())
			}
		}
		a.AddArgs("--join", strings.Join(others, ","))
	}
	for i := range c.agents {
		waitFor(t, fmt.Sprintf("agent %d to list %d brokers", i, n), func() string {
			m, err := c.metadata(i, "")
			if err != nil {
				return err.Error()
			}
			if len(m.Brokers) != n {
				return fmt.Sprintf("%d brokers", len(m.Brokers))
			}
			return ""
		})
	}
	return c
}

// seeds is every agent's address.
func (c *procCluster) seeds() []string {
	var out []string
	for _, a := range c.agents {
		out = append(out, a.Addr())
	}
	return out
}

// metadata asks agent i itself (not any agent its client knows) for
// topic's metadata, or the brokers only when topic is empty.
func (c *procCluster) metadata(i int, topic string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	if topic != "" {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := c.direct[i].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// partitionState is what agent i's Metadata says of topic-p.
func (c *procCluster) partitionState(i int, topic string, p int32) (leader, epoch int32, isr []int32, err error) {
	m, err := c.metadata(i, topic)
	if err != nil {
		return 0, 0, nil, err
	}
	for _, t := range m.Topics {
		for _, mp := range t.Partitions {
			if mp.Partition == p {
				return mp.Leader, mp.LeaderEpoch, slices.Sorted(slices.Values(mp.ISR)), nil
			}
		}
	}
	return 0, 0, nil, fmt.Errorf("agent %d lists no %s-%d", i, topic, p)
}

// createClusterTopic creates a topic with rf replicas.
func (c *procCluster) createTopic(topic string, partitions int32, rf int16, configs map[string]*string) {
	c.t.Helper()
	resp, err := newAdmin(c.t, c.agents[0].Addr()).CreateTopics(ctxT(c.t, opTimeout), partitions, rf, configs, topic)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := resp.Error(); err != nil {
		c.t.Fatalf("create %s: %v", topic, err)
	}
	for p := range partitions {
		waitFor(c.t, fmt.Sprintf("%s-%d to have a full ISR", topic, p), func() string {
			_, _, isr, err := c.partitionState(0, topic, p)
			if err != nil || len(isr) != int(rf) {
				return fmt.Sprintf("ISR %v, err %v", isr, err)
			}
			return ""
		})
	}
}

// ackLog records acknowledged records by partition and offset.
type ackLog struct {
	mu    sync.Mutex
	acked map[int32]map[int64]string
	n     int
	errs  []error
}

func newAckLog() *ackLog { return &ackLog{acked: map[int32]map[int64]string{}} }

func (l *ackLog) record(r *kgo.Record, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs = append(l.errs, err)
		return
	}
	if l.acked[r.Partition] == nil {
		l.acked[r.Partition] = map[int64]string{}
	}
	l.acked[r.Partition][r.Offset] = string(r.Value)
	l.n++
}

func (l *ackLog) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.n }

// producer produces to partitions 0..partitions-1 of topic in turn, at
// most one record per millisecond, until stopped.
type producer struct {
	stop func()
	log  *ackLog
}

func startProducer(t *testing.T, cl *kgo.Client, topic string, partitions int32) *producer {
	l := newAckLog()
	done := make(chan struct{})
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for seq := 0; seq < 1_000_000; seq++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			p := int32(seq) % partitions
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, seq))}, l.record)
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			fctx, fcancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer fcancel()
			if err := cl.Flush(fctx); err != nil {
				t.Errorf("flush: %v", err)
			}
			cancel()
		})
	}
	t.Cleanup(stop)
	return &producer{stop: stop, log: l}
}

// checkAcked reads every partition back from the start through a fresh
// client and checks that every acknowledged record is at its offset,
// offsets are contiguous, and no value appears twice.
func (c *procCluster) checkAcked(topic string, partitions int32, l *ackLog) {
	c.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	want := map[int32]int64{}
	for p, m := range l.acked {
		for off := range m {
			want[p] = max(want[p], off+1)
		}
	}
	offsets := map[string]map[int32]kgo.Offset{topic: {}}
	for p := range partitions {
		offsets[topic][p] = kgo.NewOffset().AtStart()
	}
	cl := newKgo(c.t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.ConsumePartitions(offsets))
	got := map[int32][]*kgo.Record{}
	ctx := ctxT(c.t, 60*time.Second)
	enough := func() bool {
		for p, n := range want {
			if int64(len(got[p])) < n {
				return false
			}
		}
		return true
	}
	for !enough() && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r) })
	}
	for p := range partitions {
		seen := map[string]int64{}
		for i, r := range got[p] {
			if r.Offset != int64(i) {
				c.t.Fatalf("partition %d: record %d at offset %d: offsets not contiguous", p, i, r.Offset)
			}
			if prev, dup := seen[string(r.Value)]; dup {
				c.t.Fatalf("partition %d: %q at offsets %d and %d", p, r.Value, prev, r.Offset)
			}
			seen[string(r.Value)] = r.Offset
		}
		for off, v := range l.acked[p] {
			if off >= int64(len(got[p])) || string(got[p][off].Value) != v {
				c.t.Fatalf("partition %d: acknowledged %q at offset %d is not there (read %d records)", p, v, off, len(got[p]))
			}
		}
	}
}

// leaderIndex waits until the agents agree on a live leader of topic-p
// other than not, and returns it with its epoch.
func (c *procCluster) leaderIndex(topic string, p int32, not int, live []int) (int, int32) {
	c.t.Helper()
	var leader, epoch int32
	waitFor(c.t, fmt.Sprintf("a leader of %s-%d", topic, p), func() string {
		var seen []int32
		for _, i := range live {
			l, e, _, err := c.partitionState(i, topic, p)
			if err != nil {
				return err.Error()
			}
			seen = append(seen, l)
			leader, epoch = l, e
		}
		if slices.Min(seen) != slices.Max(seen) || int(leader) == not || !slices.Contains(live, int(leader)) {
			return fmt.Sprintf("leaders %v", seen)
		}
		return ""
	})
	return int(leader), epoch
}

// TestClusterLeaderSIGKILL (issue 5): three agents on a shared MinIO; an
// idempotent acks=all producer runs while the leader of its partitions is
// SIGKILLed. The client fails over by itself; afterwards every acknowledged
// record is read back once, in order, at its offset; the killed agent
// restarts, lines its log up with the new leaders and rejoins every ISR.
func TestClusterLeaderSIGKILL(t *testing.T) {
	minio := miniotest.Start(t)
	c := startProcCluster(t, 3, minio.StoreURL(minio.NewBucket(t), "strata"), minio.Env())
	const topic, partitions = "ha", 3
	c.createTopic(topic, partitions, 3, nil)
	all := []int{0, 1, 2}
	victim, _ := c.leaderIndex(topic, 0, -1, all)

	cl := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1<<20), kgo.RecordDeliveryTimeout(90*time.Second),
		kgo.ProducerLinger(time.Millisecond))
	prod := startProducer(t, cl, topic, partitions)
	waitFor(t, "records acknowledged before the kill", func() string {
		if n := prod.log.count(); n < 1500 {
			return fmt.Sprint(n, " acknowledged")
		}
		return ""
	})
	c.agents[victim].Kill()
	before := prod.log.count()
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	leader, _ := c.leaderIndex(topic, 0, victim, survivors)
	waitFor(t, "records acknowledged after the kill", func() string {
		if n := prod.log.count(); n < before+1500 {
			return fmt.Sprint(n-before, " acknowledged since the kill")
		}
		return ""
	})
	prod.stop()
	if len(prod.log.errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(prod.log.errs), prod.log.errs[0])
	}
	c.checkAcked(topic, partitions, prod.log)
	t.Logf("%d records acknowledged, %d after the kill of agent %d; agent %d leads partition 0", prod.log.count(), prod.log.count()-before, victim, leader)

	c.agents[victim].Restart(t)
	for p := range int32(partitions) {
		waitFor(t, fmt.Sprintf("agent %d to rejoin the ISR of %s-%d", victim, topic, p), func() string {
			_, _, isr, err := c.partitionState(leader, topic, p)
			if err != nil || len(isr) != 3 {
				return fmt.Sprintf("ISR %v, err %v", isr, err)
			}
			return ""
		})
	}
	c.checkAcked(topic, partitions, prod.log)
}

// TestClusterZombieLeader (issue 5): the leader is paused (SIGSTOP) until
// another agent leads in a new epoch, with an acks=all produce sent to it
// meanwhile; resumed, it answers that produce with an error (it cannot
// commit what the others do not fetch), follows the new leader, and the
// record it took is nowhere in the log. (That a stale leader's ISR write
// loses the CAS and makes it step down is agent's TestStaleLeaderLosesCAS,
// where the order of events can be forced.)
func TestClusterZombieLeader(t *testing.T) {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil)
	const topic = "zombie"
	c.createTopic(topic, 1, 3, nil)
	all := []int{0, 1, 2}
	zombie, oldEpoch := c.leaderIndex(topic, 0, -1, all)

	cl := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(1<<20), kgo.RecordDeliveryTimeout(90*time.Second))
	for i := range 100 {
		if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("before-", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.agents[zombie].Pause()
	// Sent while it is paused: it sits in the socket until the resume.
	type answer struct {
		code int16
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 60_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = encodeBatch(batchOpts{baseTimestamp: time.Now().UnixMilli()}, []rec{{Value: []byte("from-the-zombie")}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		resp, err := c.direct[zombie].SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		answered <- answer{code: resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode}
	}()
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == zombie })
	leader, newEpoch := c.leaderIndex(topic, 0, zombie, survivors)
	if newEpoch <= oldEpoch {
		t.Fatalf("new leader %d at epoch %d, old epoch %d", leader, newEpoch, oldEpoch)
	}
	c.agents[zombie].Resume()
	for i := range 100 {
		if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint("after-", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case a := <-answered:
		if a.err == nil && a.code == 0 {
			t.Fatal("the resumed zombie leader acknowledged an acks=all produce")
		}
		t.Logf("the zombie answered its produce with %v (err %v)", kerr.ErrorForCode(a.code), a.err)
	case <-time.After(90 * time.Second):
		t.Fatal("the zombie never answered")
	}
	waitFor(t, "the zombie to follow the new leader", func() string {
		l, e, _, err := c.partitionState(zombie, topic, 0)
		if err != nil || l != int32(leader) || e != newEpoch {
			return fmt.Sprintf("zombie reports leader %d epoch %d (err %v)", l, e, err)
		}
		return ""
	})
	waitFor(t, "the zombie to rejoin the ISR", func() string {
		_, _, isr, err := c.partitionState(leader, topic, 0)
		if err != nil || len(isr) != 3 {
			return fmt.Sprintf("ISR %v (err %v)", isr, err)
		}
		return ""
	})
	recs := consumeKgo(t, c.agents[leader].Addr(), topic)[0]
	var values []string
	for _, r := range recs {
		values = append(values, string(r.Value))
	}
	if slices.Contains(values, "from-the-zombie") {
		t.Fatalf("the zombie's unacknowledged record is in the log: %v", values)
	}
	if len(values) != 200 {
		t.Fatalf("%d records in the log, want the 200 acknowledged", len(values))
	}
}

// TestClusterISRFollowerPaused (issue 5): a follower paused with SIGSTOP
// leaves the ISR, as Metadata and the leader's metrics show; acks=all with
// min.insync.replicas=3 then fails with NOT_ENOUGH_REPLICAS and writes
// nothing; resumed, the follower catches up and rejoins, and acks=all
// works again with every acknowledged record kept.
func TestClusterISRFollowerPaused(t *testing.T) {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil)
	const topic = "paused"
	c.createTopic(topic, 1, 3, map[string]*string{"min.insync.replicas": strp("3")})
	all := []int{0, 1, 2}
	leader, _ := c.leaderIndex(topic, 0, -1, all)
	follower := (leader + 1) % 3
	cl := newKgo(t, c.agents[leader].Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	produce := func(v string) error {
		return cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr()
	}
	if err := produce("full-isr"); err != nil {
		t.Fatal(err)
	}
	c.agents[follower].Pause()
	waitFor(t, "the paused follower to leave the ISR", func() string {
		_, _, isr, err := c.partitionState(leader, topic, 0)
		if err != nil || slices.Contains(isr, int32(follower)) {
			return fmt.Sprintf("ISR %v (err %v)", isr, err)
		}
		return ""
	})
	if v := metricValue(t, c.agents[leader].HTTPAddr(), "strata_under_replicated_partitions"); v != 1 {
		t.Errorf("strata_under_replicated_partitions = %v with a follower out of the ISR, want 1", v)
	}
	if err := produce("refused"); !isKerr(err, kerr.NotEnoughReplicas.Code) {
		t.Fatalf("acks=all with ISR 2 < min.insync.replicas 3: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	c.agents[follower].Resume()
	waitFor(t, "the resumed follower to rejoin the ISR", func() string {
		_, _, isr, err := c.partitionState(leader, topic, 0)
		if err != nil || len(isr) != 3 {
			return fmt.Sprintf("ISR %v (err %v)", isr, err)
		}
		return ""
	})
	if v := metricValue(t, c.agents[leader].HTTPAddr(), "strata_under_replicated_partitions"); v != 0 {
		t.Errorf("strata_under_replicated_partitions = %v with a full ISR, want 0", v)
	}
	if v := metricValue(t, c.agents[leader].HTTPAddr(), "strata_isr_changes_total", "op", "shrink"); v < 1 {
		t.Errorf("no ISR shrink counted")
	}
	if v := metricValue(t, c.agents[leader].HTTPAddr(), "strata_isr_changes_total", "op", "expand"); v < 1 {
		t.Errorf("no ISR expand counted")
	}
	if err := produce("full-again"); err != nil {
		t.Fatalf("acks=all after the follower rejoined: %v", err)
	}
	recs := consumeKgo(t, c.agents[leader].Addr(), topic)[0]
	var values []string
	for _, r := range recs {
		values = append(values, string(r.Value))
	}
	if !slices.Equal(values, []string{"full-isr", "full-again"}) {
		t.Fatalf("log holds %q, want the two acknowledged records", values)
	}
}

// metricValue reads the series of name with exactly the given labels
// (key, value, ...) from an agent's /metrics; -1 when absent.
func metricValue(t *testing.T, httpAddr, name string, labels ...string) float64 {
	t.Helper()
	m, err := metricstext.Scrape(ctxT(t, opTimeout), "http://"+httpAddr+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Series(name, labels...); ok {
		return v
	}
	return -1
}
