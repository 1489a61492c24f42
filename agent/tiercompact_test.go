package agent

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// compactionRuns reads strata_tiering_compaction_runs_total of an agent.
func compactionRuns(t *testing.T, a *running, topic string) float64 {
	t.Helper()
	mfs, err := a.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "strata_tiering_compaction_runs_total" {
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

// TestTieredCompactionAcrossLeaderFailover: the leader of a compacted,
// tiered, two-replica partition compacts the bucket; it stops, the
// follower takes over in a new epoch, more updates arrive and the new
// leader compacts again over what its predecessor wrote, and uploads on
// past what the cleaners emptied. A read from the
// start (mostly from the bucket) returns every key's latest value with
// offsets strictly increasing, and the bucket's manifest names only
// objects that are there.
func TestTieredCompactionAcrossLeaderFailover(t *testing.T) {
	c := startClusterWith(t, 2, func(cfg *Config) {
		cfg.LogCleaner.Backoff = 50 * time.Millisecond
		cfg.LogPreallocate = false
		cfg.Tiering.Interval = 20 * time.Millisecond
		cfg.Tiering.CompactionGrace = 100 * time.Millisecond
		cfg.RetentionCheckInterval = 50 * time.Millisecond
	})
	const topic = "tcmp"
	c.create(topic, 1, 2, map[string]string{"cleanup.policy": "compact", "remote.storage.enable": "true",
		"segment.bytes": "4096", "local.retention.bytes": "8192", "min.cleanable.dirty.ratio": "0.01"})
	want := map[string]string{}
	var producedMu sync.Mutex
	producedAt := map[string]int64{} // where each key's latest value went, for a failure's message
	produce := func(from, to int) {
		t.Helper()
		cl := c.client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond), kgo.ProducerBatchMaxBytes(2048))
		for i := from; i < to; i++ {
			k, v := fmt.Sprint("key-", i%40), fmt.Sprint("value-", i)
			if i%97 == 0 {
				k = fmt.Sprint("once-", i) // written once: its loss would show
			}
			want[k] = v
			cl.Produce(ctxT(t), &kgo.Record{Key: []byte(k), Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
					return
				}
				producedMu.Lock()
				producedAt[string(r.Key)] = r.Offset
				producedMu.Unlock()
			})
		}
		if err := cl.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 2000)
	first := c.leaderOf(topic, 0)
	testwait.Until(t, 30*time.Second, func() bool { return compactionRuns(t, c.agents[first], topic) >= 1 }, "the first leader to compact the bucket")
	oldEpoch := localPartition(c.agents[first], topic, 0).LeaderEpoch()
	c.agents[first].stop(t)

	second := c.leaderOf(topic, 0)
	if second == first || localPartition(c.agents[second], topic, 0).LeaderEpoch() <= oldEpoch {
		t.Fatalf("no new leader: agent %d", second)
	}
	produce(2000, 4000)
	if !testwait.Poll(30*time.Second, func() bool { return compactionRuns(t, c.agents[second], topic) >= 1 }) {
		// Seen once in CI and not since in 17 runs: say where the
		// partition stood, so that the next failure tells why.
		p := localPartition(c.agents[second], topic, 0)
		sealed := p.LocalLog().SealedSegments(0)
		sealedNext := int64(-1)
		if len(sealed) > 0 {
			sealedNext = sealed[len(sealed)-1].Next
		}
		remoteStart, remoteNext := int64(-1), int64(-1)
		if r := p.Remote(); r != nil {
			remoteStart, remoteNext = r.Start(), r.Next()
		}
		t.Fatalf("not within 30s: the new leader (agent %d) to compact the bucket: leading %v in epoch %d, ISR %v, HW %d, LSO %d, log end %d, "+
			"%d sealed segments up to %d, bucket [%d, %d)", c.agents[second].id, p.Leading(), p.LeaderEpoch(), p.ISR(), p.HighWatermark(),
			p.LastStableOffset(), p.LogEndOffset(), len(sealed), sealedNext, remoteStart, remoteNext)
	}

	// Uploads go on past the offsets both cleaners emptied: the bucket
	// reaches the end of the last sealed segment.
	p := localPartition(c.agents[second], topic, 0)
	testwait.Until(t, 30*time.Second, func() bool {
		sealed := p.LocalLog().SealedSegments(0)
		return len(sealed) > 0 && p.Remote().Next() >= sealed[len(sealed)-1].Next
	}, "the new leader to upload every sealed segment")
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	got, last, end := map[string]string{}, int64(-1), p.HighWatermark()
	for last < end-1 {
		fs := cl.PollFetches(ctxT(t))
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			got[string(r.Key)] = string(r.Value)
		})
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s reads %q, want %q (produced at offset %d; first leader agent %d at epoch %d, now agent %d; log starts at %d, locally at %d, high watermark %d; %v compaction runs)",
				k, got[k], v, producedAt[k], first, oldEpoch, second, p.LogStartOffset(), p.LocalLog().LogStartOffset(), end, compactionRuns(t, c.agents[second], topic))
		}
	}
	b, err := objstore.Open(ctxT(t), c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rep, err := tiering.Verify(ctxT(t), b, true)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("bucket: %+v, %v", rep, err)
	}
	t.Logf("after two leaders' compactions: %d segments, %d bytes in the bucket, %d retired; local log starts at %d of %d",
		rep.Segments, rep.Bytes, rep.Retired, p.LocalLog().LogStartOffset(), end)
}

// TestTieredCompactedTopicIgnoresTimeRetention: a compact-only topic is
// bounded by the cleaner, not by retention.ms, in the bucket too: records
// stamped a month ago, uploaded, keep the log's start at 0.
func TestTieredCompactedTopicIgnoresTimeRetention(t *testing.T) {
	c := startClusterWith(t, 1, func(cfg *Config) {
		cfg.LogPreallocate = false
		cfg.Tiering.Interval = 20 * time.Millisecond
		cfg.RetentionCheckInterval = 20 * time.Millisecond
	})
	const topic = "tcmp-old"
	c.create(topic, 1, 1, map[string]string{"cleanup.policy": "compact", "remote.storage.enable": "true",
		"segment.bytes": "4096", "local.retention.bytes": "8192", "retention.ms": "604800000"})
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond), kgo.ProducerBatchMaxBytes(2048))
	old := time.Now().Add(-30 * 24 * time.Hour)
	for i := range 500 {
		cl.Produce(ctxT(t), &kgo.Record{Key: []byte(fmt.Sprint("key-", i)), Value: []byte("v"), Timestamp: old}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	p := localPartition(c.agents[c.leaderOf(topic, 0)], topic, 0)
	testwait.Until(t, 30*time.Second, func() bool { return p.LocalLog().LogStartOffset() > 0 }, "local retention to leave the oldest segments to the bucket")
	time.Sleep(200 * time.Millisecond) // ten retention checks
	if start := p.LogStartOffset(); start != 0 {
		t.Fatalf("the compacted topic's log starts at %d after retention, want 0", start)
	}
}
