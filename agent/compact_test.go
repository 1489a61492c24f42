package agent

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/internal/testwait"
)

// latestValues reads a replica's local log and returns each key's last
// value, failing if offsets do not strictly increase.
func latestValues(t *testing.T, p *partition.Partition) map[string]string {
	t.Helper()
	out := map[string]string{}
	last := int64(-1)
	for _, raw := range logBatches(t, p) {
		h, recs, err := batch.Records(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			off := h.BaseOffset + int64(r.OffsetDelta)
			if off <= last {
				t.Fatalf("%s-%d: offset %d after %d", p.Topic(), p.Index(), off, last)
			}
			last = off
			out[string(r.Key)] = string(r.Value)
		}
	}
	return out
}

// TestCompactedFollowerCopiesAcrossGaps: a follower that was down while
// its leader compacted the partition fetches by offset across the gaps
// the cleaner left, cleans its own copy, and ends with the leader's latest
// value of every key.
func TestCompactedFollowerCopiesAcrossGaps(t *testing.T) {
	c := startClusterWith(t, 2, func(cfg *Config) {
		cfg.LogCleaner.Backoff = 50 * time.Millisecond
		cfg.LogPreallocate = false
	})
	c.create("cmp", 1, 2, map[string]string{"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01"})
	li := c.leaderOf("cmp", 0)
	fi := 1 - li
	c.agents[fi].stop(t)
	cl := c.client(kgo.DefaultProduceTopic("cmp"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	want := map[string]string{}
	for i := range 2000 {
		k, v := fmt.Sprint("key-", i%40), fmt.Sprint("value-", i)
		if i%97 == 0 {
			k = fmt.Sprint("once-", i) // written once: its loss would show
		}
		want[k] = v
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	leader := localPartition(c.agents[li], "cmp", 0)
	testwait.Until(t, 20*time.Second, func() bool { return leader.LocalLog().CleanState(leader.HighWatermark()).FirstDirty > 1000 }, "the leader to clean")

	c.restart(fi)
	follower := localPartition(c.agents[fi], "cmp", 0)
	testwait.Until(t, 20*time.Second, func() bool {
		return follower.LocalLog().LogEndOffset() == leader.LocalLog().LogEndOffset()
	}, "the follower to catch up")
	testwait.Until(t, 20*time.Second, func() bool { return follower.LocalLog().CleanState(follower.HighWatermark()).FirstDirty > 1000 }, "the follower to clean")
	for name, p := range map[string]*partition.Partition{"leader": leader, "follower": follower} {
		got := latestValues(t, p)
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: key %s reads %q, want %q", name, k, got[k], v)
			}
		}
	}
	if l, f := leader.LocalLog().Size(), follower.LocalLog().Size(); f > 4*l+8192 {
		t.Fatalf("follower holds %d bytes, leader %d: the follower did not compact", f, l)
	}
}

// TestTieredTopicTurnsCompactOnlyWhenAskedToTier: a tiered topic may turn
// compact (and is then compacted in the store too) only when it sets
// remote.storage.enable=true in the same change: otherwise a compacted
// topic resolves to untiered, and tiering cannot be turned off.
func TestTieredTopicTurnsCompactOnlyWhenAskedToTier(t *testing.T) {
	a := start(t, testConfig(t.TempDir()), nil)
	cl := a.client(t)
	createTopic(t, cl, "tiered", 1, nil)
	adm := kadm.NewClient(cl)
	alter := func(configs ...kadm.AlterConfig) error {
		res, err := adm.AlterTopicConfigs(ctxT(t), configs, "tiered")
		if err != nil {
			return err
		}
		return res[0].Err
	}
	err := alter(kadm.AlterConfig{Name: "cleanup.policy", Value: kmsg.StringPtr("compact")})
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("compact without remote.storage.enable on a tiered topic: %v, want INVALID_CONFIG", err)
	}
	err = alter(kadm.AlterConfig{Name: "cleanup.policy", Value: kmsg.StringPtr("compact")},
		kadm.AlterConfig{Name: "remote.storage.enable", Value: kmsg.StringPtr("true")})
	if err != nil {
		t.Fatalf("compact with remote.storage.enable=true: %v", err)
	}
	e, _ := a.entry("tiered")
	if r := e.Snap.Resolved; !r.Compact || !r.RemoteStorage {
		t.Fatalf("resolved compact %v, tiered %v: want both", r.Compact, r.RemoteStorage)
	}
}

// TestTieredCompactedLogKeepsTombstonesLocally: the local cleaner of a
// tiered compacted topic never drops a tombstone (an older value of its
// key may be in the bucket, below the local log); an untiered one does
// after delete.retention.ms.
func TestTieredCompactedLogKeepsTombstonesLocally(t *testing.T) {
	a := start(t, testConfig(t.TempDir()), nil)
	for _, c := range []struct {
		remote string
		want   time.Duration
	}{{"false", time.Second}, {"true", time.Duration(metadata.MaxDurationMs) * time.Millisecond}} {
		r, err := metadata.Resolve(map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "1000", "remote.storage.enable": c.remote}, a.cfg.TopicDefaults)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.logConfig(r).DeleteRetention; got != c.want {
			t.Errorf("remote.storage.enable=%s: local delete retention %v, want %v", c.remote, got, c.want)
		}
	}
}
