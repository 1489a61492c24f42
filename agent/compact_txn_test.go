package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testwait"
)

// consumeUntil reads topic's partition 0 from the start at the isolation
// level until it reads the value stop, and returns each key's last value
// and every value read.
func consumeUntil(t *testing.T, r *running, topic string, level kgo.IsolationLevel, stop string) (map[string]string, []string) {
	t.Helper()
	cl := r.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxBytes(64<<10))
	latest := map[string]string{}
	var all []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		for _, e := range fs.Errors() {
			if e.Err != context.DeadlineExceeded {
				t.Fatalf("fetch: %v", e.Err)
			}
		}
		done := false
		fs.EachRecord(func(rec *kgo.Record) {
			latest[string(rec.Key)] = string(rec.Value)
			all = append(all, string(rec.Value))
			done = done || string(rec.Value) == stop
		})
		if done {
			return latest, all
		}
	}
	t.Fatalf("did not read %q within 30s", stop)
	return nil, nil
}

// TestCompactedTopicWithTransactions: a franz-go transactional producer
// commits and aborts rounds of updates to the keys a plain producer also
// writes, on a compacted topic. Once the cleaner has passed, the aborted
// records are gone from the log, so consumers at read_uncommitted as well
// as read_committed read only committed data, and both read the latest
// committed value of every key.
func TestCompactedTopicWithTransactions(t *testing.T) {
	cfg := txnConfig(t)
	cfg.LogCleaner.Backoff = 50 * time.Millisecond
	cfg.LogPreallocate = false
	r := start(t, cfg, nil)
	admin := r.client(t)
	const topic = "txn-compact"
	createTopic(t, admin, topic, 1, map[string]string{"cleanup.policy": "compact", "segment.bytes": "4096",
		"min.cleanable.dirty.ratio": "0.01"})
	want := map[string]string{}
	plain := produceTxnRounds(t, r, topic, "tx-compact", want)
	p := localPartition(r, topic, 0)
	waitStable(t, p)
	if _, aborted := committedValues(t, p); len(aborted) == 0 {
		t.Fatal("no aborted records in the log before cleaning: the test would prove nothing")
	}
	// Fill a few segments with other keys so that every transaction is in
	// a sealed segment, which the cleaner may clean.
	produceFiller(t, plain, topic, want)
	testwait.Until(t, 30*time.Second, func() bool {
		for _, e := range readLog(t, p) {
			for _, v := range e.values {
				if strings.HasPrefix(v, "aborted-") {
					return false
				}
			}
		}
		return true
	}, "the cleaner to remove the aborted records")
	checkCommittedView(t, r, topic, want)
}

// checkCommittedView reads topic from its start at read_committed and at
// read_uncommitted: neither reads an aborted record, and both read want's
// value of every key.
func checkCommittedView(t *testing.T, r *running, topic string, want map[string]string) {
	t.Helper()
	for name, level := range map[string]kgo.IsolationLevel{"read_committed": kgo.ReadCommitted(), "read_uncommitted": kgo.ReadUncommitted()} {
		got, all := consumeUntil(t, r, topic, level, "stop")
		for _, v := range all {
			if strings.HasPrefix(v, "aborted-") {
				t.Fatalf("%s read the aborted record %s", name, v)
			}
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: key %s reads %q, want the latest committed %q", name, k, got[k], v)
			}
		}
		t.Logf("%s: %d records read after cleaning", name, len(all))
	}
}

// produceTxnRounds has a franz-go transactional producer commit and abort
// rounds of updates to the keys a plain producer also writes, recording
// each key's latest committed value in want, and returns the plain
// producer.
func produceTxnRounds(t *testing.T, r *running, topic, txnID string, want map[string]string) *kgo.Client {
	t.Helper()
	txn := txnClient(t, r, txnID)
	plain := r.client(t, kgo.DefaultProduceTopic(topic))
	for round := range 24 {
		commit := round%3 != 2 // the last round aborts: its values are the newest of their keys
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			k := fmt.Sprint("key-", (round+i)%10)
			v := fmt.Sprintf("txn-%d-%d", round, i)
			if !commit {
				v = "aborted-" + v
			}
			produceOne(t, txn, topic, k, v)
			if commit {
				want[k] = v
			}
			if i == 3 {
				v := fmt.Sprintf("plain-%d", round)
				produceOne(t, plain, topic, fmt.Sprint("key-", round%10), v)
				want[fmt.Sprint("key-", round%10)] = v
			}
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := txn.EndTransaction(ctxT(t), end); err != nil {
			t.Fatalf("end round %d: %v", round, err)
		}
	}
	return plain
}

// produceFiller writes records of other keys, so that every transaction
// is in a sealed segment, then the value "stop".
func produceFiller(t *testing.T, plain *kgo.Client, topic string, want map[string]string) {
	t.Helper()
	for i := range 120 {
		produceOne(t, plain, topic, fmt.Sprint("filler-", i%5), strings.Repeat("f", 100))
		want[fmt.Sprint("filler-", i%5)] = strings.Repeat("f", 100)
	}
	produceOne(t, plain, topic, "stop", "stop")
	want["stop"] = "stop"
}

func produceOne(t *testing.T, cl *kgo.Client, topic, k, v string) {
	t.Helper()
	if err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
		t.Fatalf("produce %s=%s: %v", k, v, err)
	}
}
