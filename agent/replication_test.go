package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/metricstext"
	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/internal/vfs"
)

// cluster is n in-process agents sharing one store and joined by gossip.
type cluster struct {
	t      *testing.T
	dir    string
	store  string
	fs     vfs.FS // under every agent's logs; nil for the OS
	agents []*running
	cfgs   []Config
}

// copyDelay is how long every file read takes in a slowCluster. A
// follower copies a record by fetching it, and the leader serves the fetch
// by reading its log, so the copy ends at least copyDelay after the
// record was written; an acks=all answer reads nothing. A leader that
// answers without waiting for the followers (-tags strata_unsafe_ack)
// answers copyDelay before they have the record: far longer than the
// client takes to receive the answer and run checkAckedOnISR, even on a
// loaded machine. A leader that waits answers a little after the copies.
const copyDelay = 30 * time.Millisecond

// clusterConfig is the settings the replication tests share: short lag
// and reconcile periods so that ISR changes and repairs happen in seconds.
func clusterConfig(dir, store string) Config {
	cfg := testConfig(dir)
	cfg.Store = store
	cfg.ReplicaLagTimeMax = 2 * time.Second
	cfg.ReconcileInterval = 500 * time.Millisecond
	return cfg
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	return startClusterWith(t, n, func(*Config) {})
}

// startClusterWith starts n agents whose configs tweak changes.
func startClusterWith(t *testing.T, n int, tweak func(*Config)) *cluster {
	t.Helper()
	return startClusterOn(t, nil, n, tweak)
}

// slowCluster starts n agents, as startClusterWith, whose file reads each
// take copyDelay: for the tests that check every acks=all answer with
// checkAckedOnISR, so that an answer given before the followers copied
// the record is caught every time, not only when it wins a race. Their
// logs do not fsync appends (log.flush=never): under log.flush=always
// even an answer that does not wait for the followers waits for the
// leader's fsync, which on a busy disk can outlast their copies.
func slowCluster(t *testing.T, n int, tweak func(*Config)) *cluster {
	t.Helper()
	fs := vfs.NewFaulty(vfs.Default)
	fs.SetDelay(vfs.OpRead, copyDelay)
	return startClusterOn(t, fs, n, func(cfg *Config) {
		cfg.LogFlush = "never"
		if tweak != nil {
			tweak(cfg)
		}
	})
}

// startClusterOn starts n agents on fs (nil: the OS).
func startClusterOn(t *testing.T, fs vfs.FS, n int, tweak func(*Config)) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: t.TempDir(), fs: fs}
	c.store = "file://" + filepath.Join(c.dir, "store")
	for i := range n {
		cfg := clusterConfig(filepath.Join(c.dir, fmt.Sprint("agent", i)), c.store)
		if tweak != nil {
			tweak(&cfg)
		}
		if i > 0 {
			cfg.Gossip.Join = []string{c.agents[0].members.Self().GossipAddr}
		}
		c.cfgs = append(c.cfgs, cfg)
		c.agents = append(c.agents, start(t, cfg, c.fs))
	}
	c.waitMembers(n)
	return c
}

// waitMembers waits until every running agent lists n live agents.
func (c *cluster) waitMembers(n int) {
	c.t.Helper()
	testwait.Until(c.t, 20*time.Second, func() bool {
		for _, a := range c.agents {
			if a.cancel != nil && len(a.placementAgents()) != n {
				return false
			}
		}
		return true
	}, "%d agents to see each other", n)
}

// restart starts agent i again on its data directory.
func (c *cluster) restart(i int) {
	c.t.Helper()
	cfg := c.cfgs[i]
	cfg.Gossip.Join = nil
	for j, a := range c.agents {
		if j != i && a.cancel != nil {
			cfg.Gossip.Join = append(cfg.Gossip.Join, a.members.Self().GossipAddr)
		}
	}
	c.agents[i] = start(c.t, cfg, c.fs)
}

// localPartition is agent a's replica of topic-index, nil if none.
func localPartition(a *running, topic string, index int32) *partition.Partition {
	e, ok := a.entry(topic)
	if !ok {
		return nil
	}
	for _, p := range e.Parts {
		if p.Index() == index {
			return p
		}
	}
	return nil
}

// createReplicated creates a topic with rf replicas through agent a.
func createReplicated(t *testing.T, a *running, topic string, partitions int32, rf int16, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), a.client(t))
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create %s: %v %v", topic, kerr.ErrorForCode(code), resp.Topics[0].ErrorMessage)
	}
}

// create creates a topic with rf replicas and waits until every running
// agent serves it.
func (c *cluster) create(topic string, partitions int32, rf int16, configs map[string]string) {
	c.t.Helper()
	createReplicated(c.t, c.agents[0], topic, partitions, rf, configs)
	c.waitTopicEverywhere(topic)
}

// waitTopicEverywhere waits until every running agent serves topic.
func (c *cluster) waitTopicEverywhere(topic string) {
	c.t.Helper()
	testwait.Until(c.t, 10*time.Second, func() bool {
		for _, a := range c.agents {
			if _, ok := a.entry(topic); a.cancel != nil && !ok {
				return false
			}
		}
		return true
	}, "every agent to know %s", topic)
}

// clusterClient is a producer/consumer that knows every running agent.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	var seeds []string
	for _, a := range c.agents {
		if a.cancel != nil {
			seeds = append(seeds, a.KafkaAddr().String())
		}
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// logBatches reads every batch of a local replica up to its log end.
func logBatches(t *testing.T, p *partition.Partition) [][]byte {
	t.Helper()
	var out [][]byte
	for off := p.LocalLog().LogStartOffset(); off < p.LocalLog().LogEndOffset(); {
		b, err := p.LocalLog().Read(off, 1, p.LocalLog().LogEndOffset(), true)
		if err != nil {
			t.Fatalf("read %s-%d at %d: %v", p.Topic(), p.Index(), off, err)
		}
		out = append(out, b)
		off = nextOffset(t, b)
	}
	return out
}

func nextOffset(t *testing.T, b []byte) int64 {
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	return rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
}

// TestReplicationCopiesTheLeader: with three replicas every acks=all
// record is on every ISR replica when it is acknowledged, and then on all
// three logs byte for byte (offsets and leader epochs
// included), the HW reaches the end, and Metadata lists the full ISR.
func TestReplicationCopiesTheLeader(t *testing.T) {
	c := slowCluster(t, 3, nil)
	c.create("rep", 2, 3, nil)
	cl := c.client(kgo.DefaultProduceTopic("rep"), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Every acknowledgement is checked, and with the copies slowed the
	// first early one fails the test: a few dozen records are plenty.
	const perPartition = 30
	for i := range 2 * perPartition {
		r := &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprint("v", i))}
		if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		c.checkAckedOnISR("rep", r.Partition, r.Offset)
	}
	for idx := range int32(2) {
		var leader *partition.Partition
		for _, a := range c.agents {
			if p := localPartition(a, "rep", idx); p != nil && p.Leader() == a.id {
				leader = p
			}
		}
		if leader == nil {
			t.Fatalf("partition %d has no leader", idx)
		}
		if leader.HighWatermark() != perPartition {
			t.Errorf("partition %d: leader HW %d after %d acks=all records", idx, leader.HighWatermark(), perPartition)
		}
		if isr := leader.ISR(); len(isr) != 3 {
			t.Errorf("partition %d: ISR %v, want three replicas", idx, isr)
		}
		want := logBatches(t, leader)
		for _, a := range c.agents {
			p := localPartition(a, "rep", idx)
			testwait.Until(t, 10*time.Second, func() bool { return p.LocalLog().LogEndOffset() == perPartition }, "follower to catch up")
			got := logBatches(t, p)
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("partition %d: agent %d's log differs from the leader's", idx, a.id)
			}
		}
	}
}

// leaderOf returns the index in c.agents of the agent leading topic-index,
// as the store's state names it, once a running agent leads it.
func (c *cluster) leaderOf(topic string, index int32) int {
	c.t.Helper()
	found := -1
	testwait.Until(c.t, 20*time.Second, func() bool {
		for i, a := range c.agents {
			if a.cancel == nil {
				continue
			}
			if p := localPartition(a, topic, index); p != nil && p.Leader() == a.id && p.CommittedEpochStart() {
				found = i
				return true
			}
		}
		return false
	}, "a running leader of %s-%d", topic, index)
	return found
}

// sequenceProducer returns a function that produces the values from..to-1
// to partition 0 of topic, one acks=all record at a time, checking at each
// acknowledgement that the leader's ISR holds the record.
func (c *cluster) sequenceProducer(topic string) func(from, to int) {
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	return func(from, to int) {
		for i := from; i < to; i++ {
			r := &kgo.Record{Value: []byte(fmt.Sprint(i))}
			if err := cl.ProduceSync(ctxT(c.t), r).FirstErr(); err != nil {
				c.t.Fatalf("produce %d: %v", i, err)
			}
			c.checkAckedOnISR(topic, 0, r.Offset)
		}
	}
}

// checkAckedOnISR checks, right after an acks=all acknowledgement of the
// record at offset, that every running replica in the ISR of the current
// leader holds it: acks=all answers only once the ISR has the record, and
// a replica joins the ISR only holding everything committed. A broken
// acknowledgement (-tags strata_unsafe_ack) answers before the followers
// copied the record, and this fails: in a slowCluster at the first
// acknowledgement, elsewhere only when the answer wins its race.
func (c *cluster) checkAckedOnISR(topic string, index int32, offset int64) {
	c.t.Helper()
	var isr []int32
	epoch := int32(-1)
	for _, a := range c.agents {
		if p := localPartition(a, topic, index); a.cancel != nil && p != nil && p.Leader() == a.id && p.LeaderEpoch() > epoch {
			isr, epoch = p.ISR(), p.LeaderEpoch()
		}
	}
	for _, a := range c.agents {
		p := localPartition(a, topic, index)
		if a.cancel == nil || p == nil || !slices.Contains(isr, a.id) {
			continue
		}
		if end := p.LogEndOffset(); end <= offset {
			c.t.Fatalf("%s-%d: offset %d acknowledged, but agent %d in the ISR %v (epoch %d) holds only up to %d", topic, index, offset, a.id, isr, epoch, end)
		}
	}
}

// checkSequence reads partition 0 of topic back and checks that it holds
// exactly what sequenceProducer wrote: the values 0..n-1 at offsets 0..n-1.
func (c *cluster) checkSequence(topic string, n int) {
	c.t.Helper()
	recs := c.consumeAll(topic, 0, n)
	if len(recs) != n {
		c.t.Fatalf("read back %d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if string(r.Value) != fmt.Sprint(i) || r.Offset != int64(i) {
			c.t.Fatalf("record %d: value %q at offset %d", i, r.Value, r.Offset)
		}
	}
}

// consumeAll reads topic-index from the start up to n records.
func (c *cluster) consumeAll(topic string, index int32, n int) []*kgo.Record {
	c.t.Helper()
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {index: kgo.NewOffset().AtStart()}}))
	var out []*kgo.Record
	ctx := ctxT(c.t)
	for len(out) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		out = append(out, fs.Records()...)
	}
	return out
}

// TestLeaderFailover: the leader of a three-replica partition stops; the
// first live ISR member takes over in a new epoch, the idempotent acks=all
// producer carries on by itself, every acknowledged record is read back
// once and in order, and the old leader, started again, follows and
// rejoins the ISR.
func TestLeaderFailover(t *testing.T) {
	c := slowCluster(t, 3, nil)
	c.create("fo", 1, 3, nil)
	produce := c.sequenceProducer("fo")
	produce(0, 50)
	old := c.leaderOf("fo", 0)
	oldEpoch := localPartition(c.agents[old], "fo", 0).LeaderEpoch()
	c.agents[old].stop(t)
	produce(50, 100)
	now := c.leaderOf("fo", 0)
	p := localPartition(c.agents[now], "fo", 0)
	if now == old || p.LeaderEpoch() <= oldEpoch {
		t.Fatalf("leader after failover: agent index %d epoch %d; before: %d epoch %d", now, p.LeaderEpoch(), old, oldEpoch)
	}
	c.checkSequence("fo", 100)
	c.restart(old)
	testwait.Until(t, 20*time.Second, func() bool {
		return len(localPartition(c.agents[now], "fo", 0).ISR()) == 3
	}, "the old leader to rejoin the ISR")
	back := localPartition(c.agents[old], "fo", 0)
	testwait.Until(t, 10*time.Second, func() bool { return back.LocalLog().LogEndOffset() == 100 }, "the old leader's log to match")
	if back.Leader() == c.agents[old].id {
		t.Fatalf("the restarted agent leads again at epoch %d", back.LeaderEpoch())
	}
}

// metadataISR asks agent a (uncached) for topic-index's ISR.
func metadataISR(t *testing.T, a *running, topic string, index int32) []int32 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t), a.client(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.Partition == index {
			return slices.Sorted(slices.Values(p.ISR))
		}
	}
	t.Fatalf("metadata lists no %s-%d", topic, index)
	return nil
}

// TestISRShrinkAndExpand: followers that stop fetching leave the ISR after
// replica.lag.time.max.ms, as Metadata and the ISR-change counter show;
// with the ISR below min.insync.replicas an acks=all produce fails with
// NOT_ENOUGH_REPLICAS and writes nothing, while acks=1 still works; a
// follower that comes back catches up and rejoins, and acks=all works
// again. Each acks=all record is on the ISR when it is acknowledged.
func TestISRShrinkAndExpand(t *testing.T) {
	c := slowCluster(t, 3, nil)
	c.create("isr", 1, 3, nil) // min.insync.replicas defaults to 2
	li := c.leaderOf("isr", 0)
	leader := c.agents[li]
	lcl := leader.client(t)
	// Several records, each checked on the ISR as it is acknowledged.
	const checked = 10
	for i := range checked {
		code, off := produceRaw(t, lcl, "isr", 0, fmt.Sprint("first-", i))
		if code != 0 {
			t.Fatalf("acks=all with a full ISR: %v", kerr.ErrorForCode(code))
		}
		c.checkAckedOnISR("isr", 0, off)
	}
	var followers []int
	for i := range c.agents {
		if i != li {
			followers = append(followers, i)
			c.agents[i].stop(t)
		}
	}
	testwait.Until(t, 20*time.Second, func() bool {
		return slices.Equal(metadataISR(t, leader, "isr", 0), []int32{leader.id})
	}, "the ISR to shrink to the leader")
	if n := counterValue(t, leader, "strata_isr_changes_total", "op", "shrink"); n < 1 {
		t.Errorf("strata_isr_changes_total{op=shrink} = %v after a shrink", n)
	}
	end := localPartition(leader, "isr", 0).LogEndOffset()
	if code, _ := produceRaw(t, lcl, "isr", 0, "refused"); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with ISR 1 < min.insync.replicas 2: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
	if got := localPartition(leader, "isr", 0).LogEndOffset(); got != end {
		t.Fatalf("a refused acks=all produce moved the log end from %d to %d", end, got)
	}
	one := leader.client(t, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if code := produceAcks(t, one, "isr", 0, "acks=1", 1); code != 0 {
		t.Fatalf("acks=1 with a shrunk ISR: %v", kerr.ErrorForCode(code))
	}
	c.restart(followers[0])
	testwait.Until(t, 20*time.Second, func() bool {
		return len(metadataISR(t, leader, "isr", 0)) == 2
	}, "the follower to rejoin the ISR")
	if n := counterValue(t, leader, "strata_isr_changes_total", "op", "expand"); n < 1 {
		t.Errorf("strata_isr_changes_total{op=expand} = %v after an expand", n)
	}
	for i := range checked {
		code, off := produceRaw(t, lcl, "isr", 0, fmt.Sprint("again-", i))
		if code != 0 {
			t.Fatalf("acks=all after the ISR grew back: %v", kerr.ErrorForCode(code))
		}
		c.checkAckedOnISR("isr", 0, off)
	}
	back := localPartition(c.agents[followers[0]], "isr", 0)
	testwait.Until(t, 10*time.Second, func() bool { return back.LocalLog().LogEndOffset() == 2*checked+1 }, "the follower to hold every record")
}

// counterValue scrapes agent a's /metrics and sums the samples named name
// whose labels include every name/value pair given (for one series, give
// all its labels); 0 when there is none.
func counterValue(t *testing.T, a *running, name string, labelPairs ...string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metricstext.Scrape(ctx, "http://"+a.HTTPAddr().String()+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.Value(name, labelPairs...)
	return v
}

// produceAcks produces one record with the given acks and returns the
// partition's error code.
func produceAcks(t *testing.T, cl *kgo.Client, topic string, partition int32, value string, acks int16) int16 {
	t.Helper()
	req := kafkawire.Produce(topic, partition, recordBatch(t, value), acks, 10*time.Second)
	resp, err := toSeed(t, cl, req)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// TestStaleLeaderLosesCAS: another agent is made leader in the store
// without anyone being told (no broadcast, and re-reads a minute apart),
// as when the leader misses an election. The stale leader's next ISR
// change loses the CAS; it re-reads the state and follows, the new leader
// learns of its leadership from the follower's newer epoch, and every
// acks=all record acknowledged before or after is kept.
func TestStaleLeaderLosesCAS(t *testing.T) {
	c := slowCluster(t, 3, func(cfg *Config) { cfg.ReconcileInterval = time.Minute })
	c.create("stale", 1, 3, nil)
	li := c.leaderOf("stale", 0)
	stale := localPartition(c.agents[li], "stale", 0)
	produce := c.sequenceProducer("stale")
	produce(0, 20)

	st, etag, err := c.agents[li].store.PartitionState(ctxT(t), stale.TopicID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ni, xi := (li+1)%3, (li+2)%3
	next := st
	next.Leader, next.LeaderEpoch, next.StateEpoch = c.agents[ni].id, st.LeaderEpoch+1, st.StateEpoch+1
	if _, err := c.agents[li].store.CASPartitionState(ctxT(t), stale.TopicID(), 0, next, etag); err != nil {
		t.Fatal(err)
	}
	// The third agent stops: the stale leader drops it from the ISR, a
	// write that must fail.
	c.agents[xi].stop(t)
	testwait.Until(t, 20*time.Second, func() bool {
		return stale.Leader() == c.agents[ni].id && stale.LeaderEpoch() == next.LeaderEpoch
	}, "the stale leader to follow")
	if n := counterValue(t, c.agents[li], "strata_isr_change_conflicts_total"); n < 1 {
		t.Errorf("strata_isr_change_conflicts_total = %v on the stale leader, want its lost CAS counted", n)
	}
	newLeader := localPartition(c.agents[ni], "stale", 0)
	testwait.Until(t, 20*time.Second, func() bool {
		return newLeader.Leader() == c.agents[ni].id && newLeader.CommittedEpochStart()
	}, "the new leader to lead")
	produce(20, 40)
	c.checkSequence("stale", 40)
}

// TestTieringAcrossFailover: only the leader uploads; followers trim their
// local logs as the leader's uploads land; after the leader stops, the new
// leader re-reads the manifest and continues the uploads where the old
// one stopped, and a consumer from offset 0 reads every record, the old
// ones from the bucket.
func TestTieringAcrossFailover(t *testing.T) {
	c := startClusterWith(t, 3, func(cfg *Config) {
		cfg.Tiering.Interval = 20 * time.Millisecond
		cfg.Tiering.ChunkBytes = 4096
		cfg.Tiering.CacheBytes = 1 << 20
		cfg.RetentionCheckInterval = 50 * time.Millisecond
	})
	c.create("tf", 1, 3, tieredTopicConfigs)
	cl := c.client(kgo.DefaultProduceTopic("tf"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(4096))
	send := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "r%06d-%s", i, bytes.Repeat([]byte{'x'}, 180))})
		}
		if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	send(0, 1000)
	li := c.leaderOf("tf", 0)
	old := localPartition(c.agents[li], "tf", 0)
	testwait.Until(t, 20*time.Second, func() bool { return old.HighestTieredOffset() > 500 }, "the leader to upload")
	for i, a := range c.agents {
		p := localPartition(a, "tf", 0)
		testwait.Until(t, 20*time.Second, func() bool { return p.LocalLogStartOffset() > 0 }, "agent %d to trim its local log", i)
	}
	tieredBefore := old.HighestTieredOffset()
	c.agents[li].stop(t)
	send(1000, 2000)
	ni := c.leaderOf("tf", 0)
	next := localPartition(c.agents[ni], "tf", 0)
	testwait.Until(t, 20*time.Second, func() bool { return next.HighestTieredOffset() > 1500 }, "the new leader to upload")
	if next.HighestTieredOffset() <= tieredBefore {
		t.Fatalf("tiered up to %d after failover, %d before", next.HighestTieredOffset(), tieredBefore)
	}
	recs := c.consumeAll("tf", 0, 2000)
	if len(recs) != 2000 {
		t.Fatalf("read back %d records, want 2000", len(recs))
	}
	for i, r := range recs {
		if r.Offset != int64(i) || !bytes.HasPrefix(r.Value, fmt.Appendf(nil, "r%06d-", i)) {
			t.Fatalf("record %d: offset %d value %.10q", i, r.Offset, r.Value)
		}
	}
}

// TestGroupOffsetsSurviveCoordinatorFailover: __consumer_offsets is
// replicated like any topic, so when the agent coordinating a group stops,
// the new leader of the group's partition coordinates it with every
// committed offset.
func TestGroupOffsetsSurviveCoordinatorFailover(t *testing.T) {
	c := slowCluster(t, 3, func(cfg *Config) { cfg.OffsetsTopicPartitions = 3 })
	c.create("g", 2, 3, nil)
	adm := kadm.NewClient(c.client())
	commit := func(p0, p1 int64) {
		commits := kadm.Offsets{}
		commits.Add(kadm.Offset{Topic: "g", Partition: 0, At: p0, LeaderEpoch: -1})
		commits.Add(kadm.Offset{Topic: "g", Partition: 1, At: p1, LeaderEpoch: -1})
		resp, err := adm.CommitOffsets(ctxT(t), "grp", commits)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	commit(13, 38)
	coord := adm.FindGroupCoordinators(ctxT(t), "grp")
	if coord["grp"].Err != nil {
		t.Fatalf("find coordinator: %v", coord["grp"].Err)
	}
	ci := slices.IndexFunc(c.agents, func(a *running) bool { return a.id == coord["grp"].NodeID })
	// Each commit is answered once its records are on the ISR of the
	// coordinator's partition of __consumer_offsets (the only one
	// written); the last one commits 17 and 42.
	for round := range int64(5) {
		if round > 0 {
			commit(13+round, 38+round)
		}
		for idx := range int32(3) {
			if p := localPartition(c.agents[ci], offsetsTopic, idx); p != nil && p.Leader() == c.agents[ci].id && p.LogEndOffset() > 0 {
				c.checkAckedOnISR(offsetsTopic, idx, p.LogEndOffset()-1)
			}
		}
	}
	c.agents[ci].stop(t)
	fresh := kadm.NewClient(c.client())
	var got kadm.OffsetResponses
	var err error
	testwait.Until(t, 30*time.Second, func() bool {
		got, err = fresh.FetchOffsets(ctxT(t), "grp")
		return err == nil && got.Error() == nil
	}, "the group's offsets from the new coordinator")
	for _, want := range []struct {
		p  int32
		at int64
	}{{0, 17}, {1, 42}} {
		if o, ok := got.Lookup("g", want.p); !ok || o.At != want.at {
			t.Errorf("g-%d: committed %+v, want %d", want.p, o, want.at)
		}
	}
}

// TestRacingTakeOvers: two agents that both try to take over a partition
// from the same state resolve to one leader; the loser re-reads the state
// and follows in the winner's epoch.
func TestRacingTakeOvers(t *testing.T) {
	c := slowCluster(t, 3, nil)
	c.create("race", 1, 3, nil)
	li := c.leaderOf("race", 0)
	x, y := c.agents[(li+1)%3], c.agents[(li+2)%3]
	px, py := localPartition(x, "race", 0), localPartition(y, "race", 0)
	st, etag := px.StateAndETag()
	results := make(chan error, 2)
	for _, r := range []struct {
		a *running
		p *partition.Partition
	}{{x, px}, {y, py}} {
		go func() {
			next := st
			next.Leader, next.LeaderEpoch, next.StateEpoch = r.a.id, st.LeaderEpoch+1, st.StateEpoch+1
			results <- r.a.ctl.TakeOver(ctxT(t), r.p, st, next, etag, "test race")
		}()
	}
	for range 2 {
		if err := <-results; err != nil {
			t.Fatalf("takeOver: %v", err)
		}
	}
	stored, _, err := x.store.PartitionState(ctxT(t), px.TopicID(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if stored.LeaderEpoch != st.LeaderEpoch+1 || stored.Leader != x.id && stored.Leader != y.id {
		t.Fatalf("stored state %+v after the race from %+v", stored, st)
	}
	testwait.Until(t, 10*time.Second, func() bool {
		for _, a := range c.agents {
			p := localPartition(a, "race", 0)
			if p.Leader() != stored.Leader || p.LeaderEpoch() != stored.LeaderEpoch {
				return false
			}
		}
		return true
	}, "all three agents to agree on the winner")
	winner := c.agents[slices.IndexFunc(c.agents, func(a *running) bool { return a.id == stored.Leader })]
	for i := range 10 {
		if code := produceAcks(t, winner.client(t), "race", 0, fmt.Sprint("after-", i), -1); code != 0 {
			t.Fatalf("acks=all to the winner: %v", kerr.ErrorForCode(code))
		}
		// The leader's log end right after the answer: its last record
		// is the acknowledged one, unless another produce came between.
		c.checkAckedOnISR("race", 0, localPartition(winner, "race", 0).LogEndOffset()-1)
	}
	loser := x
	if stored.Leader == x.id {
		loser = y
	}
	if code := produceAcks(t, loser.client(t), "race", 0, "to-the-loser", -1); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to the loser: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}

// TestDeleteRecordsReachesFollowers: a DeleteRecords on the leader moves
// its followers' log starts too (through the fetch's log start, as in
// Kafka; with tiering, the manifest carries it), so a new leader does not
// serve the deleted records.
func TestDeleteRecordsReachesFollowers(t *testing.T) {
	c := slowCluster(t, 3, nil)
	c.create("del", 1, 3, map[string]string{"remote.storage.enable": "false", "segment.bytes": "1024"})
	produce := c.sequenceProducer("del")
	produce(0, 40)
	adm := kadm.NewClient(c.client())
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "del", Partition: 0, At: 25})
	resp, err := adm.DeleteRecords(ctxT(t), del)
	if err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	produce(40, 41) // a fetch after the delete carries the new start
	for _, a := range c.agents {
		p := localPartition(a, "del", 0)
		testwait.Until(t, 10*time.Second, func() bool { return p.LogStartOffset() == 25 }, "agent %d's log start to move", a.id)
	}
	c.agents[c.leaderOf("del", 0)].stop(t)
	recs := c.consumeAll("del", 0, 16)
	if len(recs) == 0 || recs[0].Offset != 25 {
		t.Fatalf("after failover the log starts at %v, want 25", recs)
	}
}

// TestLostDiskLeavesTheISR: the leader of a three-replica partition comes
// back on an empty disk while the store still names it leader with a full
// ISR (here every agent was down, so nobody had taken over). It must not
// lead an empty log: it leaves the ISR and hands leadership to an agent
// that has every acknowledged record, and once that one is back every
// record is read back and the wiped agent rejoins the ISR.
func TestLostDiskLeavesTheISR(t *testing.T) {
	c := slowCluster(t, 3, nil)
	c.create("lost", 1, 3, map[string]string{"min.insync.replicas": "2", "remote.storage.enable": "false"})
	li := c.leaderOf("lost", 0)
	produce := c.sequenceProducer("lost")
	produce(0, 50)
	for _, a := range c.agents {
		a.stop(t)
	}
	if err := os.RemoveAll(c.cfgs[li].DataDir); err != nil {
		t.Fatal(err)
	}
	// A new disk for the same agent, as with --agent-id.
	c.cfgs[li].AgentID = c.agents[li].id
	c.restart(li)
	wiped := c.agents[li]
	testwait.Until(t, 20*time.Second, func() bool {
		p := localPartition(wiped, "lost", 0)
		if p == nil {
			return false
		}
		st, _ := p.StateAndETag()
		return st.Leader != wiped.id && !slices.Contains(st.ISR, wiped.id)
	}, "the wiped agent to leave the ISR")
	// The store names another agent leader, one that holds every record.
	e, _ := wiped.entry("lost")
	st, _, err := wiped.store.PartitionState(ctxT(t), e.Meta.ID, 0)
	if err != nil || st.Leader < 0 || st.Leader == wiped.id || !slices.Contains(st.ISR, st.Leader) || slices.Contains(st.ISR, wiped.id) {
		t.Fatalf("stored state after the wiped agent's start: %+v, %v", st, err)
	}
	for i := range c.agents {
		if i != li {
			c.restart(i)
		}
	}
	c.checkSequence("lost", 50)
	testwait.Until(t, 30*time.Second, func() bool {
		p := localPartition(wiped, "lost", 0)
		return p != nil && slices.Contains(p.ISR(), wiped.id) && p.LogEndOffset() == 50
	}, "the wiped agent back in the ISR")
}
