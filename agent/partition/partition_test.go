package partition

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/tiering"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// fakeCluster is a store side that accepts every write.
type fakeCluster struct{}

func (fakeCluster) ReplicaLagTimeMax() time.Duration { return time.Minute }
func (fakeCluster) LeaderRefused(int32)              {}
func (fakeCluster) LeaderReached(int32)              {}
func (fakeCluster) AgentAddr(context.Context, int32) (string, error) {
	return "", errors.New("no peers in this test")
}
func (fakeCluster) WriteState(context.Context, *Partition, metadata.PartitionState, string) (string, error) {
	return "etag", nil
}
func (fakeCluster) ReloadState(context.Context, *Partition) error { return nil }
func (fakeCluster) RefreshState(*Partition)                       {}
func (fakeCluster) AnnounceState(*Partition, int32)               {}

// openLeader opens partition 0 of "t" on agent 1, leading with replicas
// and ISR isr.
func openLeader(t *testing.T, replicas, isr []int32) *Partition {
	t.Helper()
	return openLeaderWith(t, log.DefaultConfig(), replicas, isr)
}

// openLeaderWith is openLeader with a log configured by cfg.
func openLeaderWith(t *testing.T, cfg log.Config, replicas, isr []int32) *Partition {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := log.Open(t.TempDir(), cfg, log.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	st := metadata.PartitionState{Leader: 1, LeaderEpoch: 0, StateEpoch: 0, Replicas: replicas, ISR: isr}
	p, err := Open(Config{Topic: "t", Index: 0, AgentID: 1, Log: l, Flush: log.FlushNever, MinISR: 1, Stored: st, ETag: "e0"},
		Deps{Cluster: fakeCluster{}, Logger: logger, Metrics: NewMetrics(prometheus.NewRegistry()), Notify: func() {},
			Started: make(chan struct{}), Fetchers: NewFetchers(1, fakeCluster{}, peer.Options{}, logger)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, err := p.ApplyState(st, "e0"); err != nil {
		t.Fatal(err)
	}
	return p
}

func oneRecord(t *testing.T) []byte {
	t.Helper()
	b, err := batch.Build(batch.DefaultBuildOptions(), []batch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAcksAllWaitsForTheISR: a leader with a follower in its ISR does not
// complete an acks=all append until the follower has fetched past it;
// acks=1 completes at once. With -tags strata_unsafe_ack it fails.
func TestAcksAllWaitsForTheISR(t *testing.T) {
	p := openLeader(t, []int32{1, 2}, []int32{1, 2})
	res, wait, err := p.Append(oneRecord(t), -1)
	if err != nil {
		t.Fatal(err)
	}
	// The follower has fetched nothing: the wait can only end with its
	// context. (A bound, not a synchronisation: no answer may come.)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err = wait(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acks=all wait with the follower behind: %v, want the context's deadline", err)
	}
	if hw := p.HighWatermark(); hw > res.BaseOffset {
		t.Fatalf("HW %d passed offset %d before the follower had it", hw, res.BaseOffset)
	}
	// The follower fetches from past the record: it holds it.
	if _, err := p.ReplicaRead(2, 0, res.LastOffset+1, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != res.LastOffset+1 {
		t.Fatalf("HW %d after the follower's fetch at %d", hw, res.LastOffset+1)
	}
	_, wait, err = p.Append(oneRecord(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(context.Background()); err != nil {
		t.Fatalf("acks=1 wait: %v", err)
	}
}

// TestAcksAllAloneCommitsAtOnce: with an ISR of the leader alone, acks=all
// commits at the local append.
func TestAcksAllAloneCommitsAtOnce(t *testing.T) {
	p := openLeader(t, []int32{1}, []int32{1})
	res, wait, err := p.Append(oneRecord(t), -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hw := p.HighWatermark(); hw != res.LastOffset+1 {
		t.Fatalf("HW %d, want %d", hw, res.LastOffset+1)
	}
}

// TestOpenServesNothingUntilApplied: a partition opened in a stored state
// reports that state's leader (tiering reads it) but refuses appends
// until ApplyState gives it its role; Close may be called twice.
func TestOpenServesNothingUntilApplied(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := log.Open(t.TempDir(), log.DefaultConfig(), log.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	st := metadata.PartitionState{Leader: 1, LeaderEpoch: 3, StateEpoch: 5, Replicas: []int32{1}, ISR: []int32{1}}
	p, err := Open(Config{Topic: "t", Index: 0, AgentID: 1, Log: l, Flush: log.FlushNever, MinISR: 1, Stored: st, ETag: "e5"},
		Deps{Cluster: fakeCluster{}, Logger: logger, Metrics: NewMetrics(prometheus.NewRegistry()), Notify: func() {},
			Started: make(chan struct{}), Fetchers: NewFetchers(1, fakeCluster{}, peer.Options{}, logger)})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Leading() || p.LeaderEpoch() != 3 {
		t.Fatalf("opened: leading %v epoch %d, want the stored leader and epoch", p.Leading(), p.LeaderEpoch())
	}
	if _, _, err := p.Append(oneRecord(t), -1); err == nil {
		t.Fatal("append before the first ApplyState succeeded")
	}
	if changed, err := p.ApplyState(st, "e5"); err != nil || !changed {
		t.Fatalf("ApplyState of the stored state: changed %v, %v", changed, err)
	}
	_, wait, err := p.Append(oneRecord(t), -1)
	if err != nil {
		t.Fatalf("append after ApplyState: %v", err)
	}
	// Close waits for appends whose wait has not run.
	if err := wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestReadBelowTheLocalLogPastAStaleBucketEnd: a replica's idea of the
// bucket's end can lag behind its local log start (its log restarted at
// a leader's local start, and it leads before its next re-read of the
// manifest). A read between the two must be served from the bucket, not
// answered OFFSET_OUT_OF_RANGE, which makes consumers reset.
func TestReadBelowTheLocalLogPastAStaleBucketEnd(t *testing.T) {
	ctx := context.Background()
	cfg := log.DefaultConfig()
	cfg.Remote, cfg.LocalRetentionBytes, cfg.LocalRetentionMs = true, 0, -1
	p := openLeaderWith(t, cfg, []int32{1}, []int32{1})
	write := func(n int) {
		t.Helper()
		for range n {
			_, wait, err := p.Append(oneRecord(t), -1)
			if err == nil {
				err = wait(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := p.LocalLog().Roll(); err != nil {
			t.Fatal(err)
		}
	}
	bucket := objstore.NewMem()
	logger := slog.New(slog.DiscardHandler)
	stale, err := tiering.New(bucket, tiering.DefaultConfig(), nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	write(5)
	if err := p.OpenTiering(ctx, stale); err != nil {
		t.Fatal(err)
	}
	stale.UploadOnce(ctx) // the partition knows the bucket up to 5
	// Another writer (the leader, as this replica followed) takes the
	// bucket to 10, and local retention then deletes up to there.
	write(5)
	other, err := tiering.New(bucket, tiering.DefaultConfig(), nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Open(ctx, p, metadata.PartitionPrefix(p.topicID, p.index)); err != nil {
		t.Fatal(err)
	}
	other.UploadOnce(ctx)
	if _, err := p.LocalLog().ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if p.Remote().Next() != 5 || p.LocalLog().LogStartOffset() != 10 {
		t.Fatalf("setup: bucket end known here %d, local start %d; want 5 and 10", p.Remote().Next(), p.LocalLog().LogStartOffset())
	}
	b, err := p.Read(ctx, 5, 1<<20, true)
	if err != nil || len(b) == 0 {
		t.Fatalf("read at 5: %d bytes, %v", len(b), err)
	}
	if base := int64(binary.BigEndian.Uint64(b)); base != 5 {
		t.Fatalf("read at 5 starts at offset %d", base)
	}
}

// TestDeleteRecordsWaitsForTiering: on a tiered partition whose tiering
// has not opened (the store failed at start), DeleteRecords is refused
// with a storage error, which clients retry: deleting locally only would
// leave the bucket's start behind, and the records readable there.
func TestDeleteRecordsWaitsForTiering(t *testing.T) {
	ctx := context.Background()
	cfg := log.DefaultConfig()
	cfg.Remote = true
	p := openLeaderWith(t, cfg, []int32{1}, []int32{1})
	for range 3 {
		_, wait, err := p.Append(oneRecord(t), -1)
		if err == nil {
			err = wait(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.DeleteRecordsBefore(ctx, 2); !errors.Is(err, log.ErrStorage) {
		t.Fatalf("DeleteRecords before tiering opened: %v, want a storage error", err)
	}
	tr, err := tiering.New(objstore.NewMem(), tiering.DefaultConfig(), nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := p.OpenTiering(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteRecordsBefore(ctx, 2); err != nil || p.LogStartOffset() != 2 {
		t.Fatalf("DeleteRecords once tiering opened: start %d, %v", p.LogStartOffset(), err)
	}
}

// TestMovedAwayEndsAcksAllWaits: an acks=all append waiting for a
// follower hears NOT_LEADER_OR_FOLLOWER as soon as the replica is marked
// moved away, before Close: a group coordinator's write waits holding the
// coordinator's lock, and the agent unloads the coordinator (taking that
// lock) before it closes the partition.
func TestMovedAwayEndsAcksAllWaits(t *testing.T) {
	p := openLeader(t, []int32{1, 2}, []int32{1, 2})
	_, wait, err := p.Append(oneRecord(t), -1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait(context.Background()) }()
	select {
	case err := <-done:
		t.Fatalf("acks=all wait ended before the follower fetched: %v", err)
	case <-time.After(100 * time.Millisecond): // parked, waiting for the follower
	}
	p.MovedAway()
	select {
	case err := <-done:
		if !errors.Is(err, dataplane.ErrNotLeader) {
			t.Fatalf("acks=all wait after MovedAway: %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acks=all wait still running 10 s after MovedAway")
	}
}
