package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestJoinRebalances (issue 6): three agents hold a topic of 12 partitions
// with two replicas each under steady produce load; a fourth agent joins,
// and within 60 s (settling period 2 s) it holds its fair share of
// replicas and leaderships, within one. It copies only the partitions'
// tails that were not yet in the bucket when it joined, and every
// acknowledged record is still read back once, at its offset.
func TestJoinRebalances(t *testing.T) {
	tweak := func(cfg *Config) {
		cfg.RebalanceSettle = 2 * time.Second
		cfg.Tiering.Interval = 20 * time.Millisecond
		cfg.Tiering.ChunkBytes = 4096
		cfg.Tiering.CacheBytes = 1 << 20
		cfg.RetentionCheckInterval = 50 * time.Millisecond
	}
	c := startClusterWith(t, 3, tweak)
	const topic, partitions = "bal", 12
	c.create(topic, partitions, 2, map[string]string{"segment.bytes": "16384", "local.retention.bytes": "16384", "retention.ms": "-1"})

	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(8192), kgo.RecordRetries(1<<20), kgo.RecordDeliveryTimeout(60*time.Second))
	var mu sync.Mutex
	acked := map[int32]map[int64]string{}
	var failed []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; seq < 200_000; seq++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			p := int32(seq % partitions)
			v := fmt.Sprintf("%06d-%0200d", seq, 0)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err)
					return
				}
				if acked[r.Partition] == nil {
					acked[r.Partition] = map[int64]string{}
				}
				acked[r.Partition][r.Offset] = string(r.Value)
			})
		}
	}()
	stopProducer := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cl.Flush(ctx)
	}
	t.Cleanup(stopProducer)

	// Some history, most of it in the bucket.
	waitFor(t, 60*time.Second, "history in the bucket", func() bool {
		for idx := range int32(partitions) {
			li := c.leaderOf(topic, idx)
			if localPartition(c.agents[li], topic, idx).HighestTieredOffset() < 60 {
				return false
			}
		}
		return true
	})
	tieredAtJoin := map[int32]int64{}
	for idx := range int32(partitions) {
		li := c.leaderOf(topic, idx)
		tieredAtJoin[idx] = localPartition(c.agents[li], topic, idx).HighestTieredOffset() + 1
	}
	joined := time.Now()
	cfg := clusterConfig(filepath.Join(c.dir, "agent3"), c.store)
	tweak(&cfg)
	cfg.Gossip.Join = []string{c.agents[0].members.Self().GossipAddr}
	c.cfgs = append(c.cfgs, cfg)
	newcomer := start(t, cfg, nil)
	c.agents = append(c.agents, newcomer)

	var replicas, leaders int
	waitFor(t, 60*time.Second, "the new agent's fair share", func() bool {
		e, ok := newcomer.entry(topic)
		if !ok {
			return false
		}
		replicas, leaders = 0, 0
		for _, p := range e.snap.Partitions {
			st := partitionState(p)
			if st.Moving() {
				return false
			}
			for _, r := range st.Replicas {
				if r == newcomer.id {
					replicas++
				}
			}
			if st.Leader == newcomer.id {
				leaders++
			}
		}
		return replicas >= 5 && replicas <= 7 && leaders >= 2 && leaders <= 4
	})
	took := time.Since(joined)
	stopProducer()
	mu.Lock()
	defer mu.Unlock()
	if len(failed) > 0 {
		t.Fatalf("%d produces failed, first: %v", len(failed), failed[0])
	}

	// What the newcomer copied, against the tails not in the bucket when
	// it joined (read from the current leaders' logs).
	var tails int64
	for _, p := range localPartitionsOf(newcomer, topic) {
		leader := localPartition(c.agents[c.leaderOf(topic, p.index)], topic, p.index)
		// From the batch holding the first untiered offset at the join
		// to the end; older parts of it may be in the bucket by now.
		for off := tieredAtJoin[p.index]; off < leader.HighWatermark(); {
			b, err := leader.Read(ctxT(t), off, 1, true)
			if err != nil || len(b) == 0 {
				t.Fatalf("read %s-%d at %d: %v", topic, p.index, off, err)
			}
			tails += int64(len(b))
			off = nextOffset(t, b)
		}
	}
	copied := testutilTopicCounter(t, newcomer, "strata_replica_copied_bytes_total", topic)
	t.Logf("new agent: %d replicas, %d leaderships after %v; copied %.0f bytes, untiered tails %d bytes", replicas, leaders, took.Round(time.Millisecond), copied, tails)
	if copied <= 0 || copied > float64(tails) {
		t.Errorf("the new agent copied %.0f bytes; the untiered tails were %d", copied, tails)
	}

	total := 0
	for idx := range int32(partitions) {
		recs := c.consumeAll(topic, idx, len(acked[idx]))
		seen := map[string]bool{}
		for i, r := range recs {
			if r.Offset != int64(i) || seen[string(r.Value)] {
				t.Fatalf("partition %d: record %d at offset %d (duplicate %v)", idx, i, r.Offset, seen[string(r.Value)])
			}
			seen[string(r.Value)] = true
		}
		for off, v := range acked[idx] {
			if off >= int64(len(recs)) || string(recs[off].Value) != v {
				t.Fatalf("partition %d: acknowledged record at %d missing", idx, off)
			}
		}
		total += len(acked[idx])
	}
	t.Logf("%d acknowledged records read back", total)
}

// localPartitionsOf is agent a's replicas of topic.
func localPartitionsOf(a *running, topic string) []*partition {
	e, ok := a.entry(topic)
	if !ok {
		return nil
	}
	return e.parts
}

// testutilTopicCounter reads a counter of agent a by its topic label.
func testutilTopicCounter(t *testing.T, a *running, name, topic string) float64 {
	t.Helper()
	mfs, err := a.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "topic" && l.GetValue() == topic {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
