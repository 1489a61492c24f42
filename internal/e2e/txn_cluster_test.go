package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// TestClusterTransactSIGKILL (issue 21): franz-go's consume-transform-
// produce loop (GroupTransactSession) moves every record of topic A to
// topic B on three agent processes, committing and (every third round)
// aborting, while the agent that coordinates its transactions is
// SIGKILLed. The partition's next leader takes the coordinator over; B at
// read_committed then holds every input exactly once and the group's
// committed offsets are A's ends.
func TestClusterTransactSIGKILL(t *testing.T) {
	c := startProcCluster(t, 3, "file://"+t.TempDir(), nil, "--transaction-state-partitions=1",
		"--offsets-topic-partitions=1", "--transaction-abort-check-interval=200ms", "--group-initial-rebalance-delay=100ms")
	c.createTopic("txk-a", 2, 3, nil)
	c.createTopic("txk-b", 1, 3, nil)
	const n = 300
	in := newKgo(t, c.agents[0].Addr(), kgo.SeedBrokers(c.seeds()...), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for i := range n {
		if err := in.ProduceSync(ctx, &kgo.Record{Topic: "txk-a", Value: fmt.Appendf(nil, "%04d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(c.seeds()...), kgo.TransactionalID("txk"),
		kgo.TransactionTimeout(30*time.Second), kgo.ConsumerGroup("txk-group"), kgo.ConsumeTopics("txk-a"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(), kgo.FetchMaxPartitionBytes(600),
		kgo.DefaultProduceTopic("txk-b"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	all, victim := []int{0, 1, 2}, -1
	committed, rounds := 0, 0
	for committed < n {
		rounds++
		if rounds > 500 {
			t.Fatalf("%d records committed after 500 rounds", committed)
		}
		if rounds == 5 {
			victim, _ = c.leaderIndex("__transaction_state", 0, -1, all)
			c.agents[victim].Kill()
		}
		fetches := sess.PollRecords(ctx, 50)
		if err := fetches.Err0(); err != nil {
			// The group coordinator may have died with the transaction
			// coordinator; Strata keeps members in memory only, so the
			// client rejoins (UNKNOWN_MEMBER_ID), and polls again.
			if ctx.Err() != nil {
				t.Fatalf("poll: %v", err)
			}
			t.Logf("poll (round %d): %v", rounds, err)
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		var recs []*kgo.Record
		fetches.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil) // End decides
		}
		abort := rounds%3 == 0
		if abort {
			_ = sess.Client().Flush(ctx) // written, so that the abort has records to abort
		}
		ok, err := sess.End(ctx, kgo.TransactionEndTry(!abort))
		if err != nil {
			t.Fatalf("end (round %d): %v", rounds, err)
		}
		if ok && !abort {
			committed += len(recs)
		}
	}
	survivors := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == victim })
	leader, _ := c.leaderIndex("txk-b", 0, victim, survivors)
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("%04d", i)
	}
	// The last commit's markers land after EndTxn answers: wait for them.
	waitFor(t, "B at read_committed to hold every input once", func() string {
		got := readToStable(t, c.direct[leader], "txk-b", 0)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Sprintf("%d records (want %d once each); first %q", len(got), n, got[:min(len(got), 10)])
		}
		return ""
	})
	var seeds []string
	for _, i := range survivors {
		seeds = append(seeds, c.agents[i].Addr())
	}
	adm := kadm.NewClient(newKgo(t, seeds[0], kgo.SeedBrokers(seeds...)))
	ends, err := adm.ListEndOffsets(ctx, "txk-a")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the committed offsets to be A's ends", func() string {
		offsets, err := adm.FetchOffsets(ctx, "txk-group")
		if err != nil {
			return err.Error()
		}
		msg := ""
		ends.Each(func(o kadm.ListedOffset) {
			if got, _ := offsets.Lookup("txk-a", o.Partition); got.At != o.Offset {
				msg += fmt.Sprintf("txk-a-%d at %d, its end %d; ", o.Partition, got.At, o.Offset)
			}
		})
		return msg
	})
	t.Logf("killed agent %d (the transaction coordinator) at round 5; %d rounds", victim, rounds)
}

// readToStable reads a partition at read_committed from the agent cl is
// seeded with (its leader), exactly up to the last stable offset.
func readToStable(t *testing.T, cl *kgo.Client, topic string, partition int32) []string {
	t.Helper()
	var out []string
	offset := int64(0)
	for range 1000 {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.IsolationLevel = 0, 1, 1<<20, 1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		raw, err := cl.SeedBrokers()[0].Request(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fp := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if fp.ErrorCode != 0 {
			t.Fatalf("fetch %s-%d at %d: %v", topic, partition, offset, kerr.ErrorForCode(fp.ErrorCode))
		}
		if offset >= fp.LastStableOffset {
			return out
		}
		// Control records are kept only to move past them.
		fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: partition,
			Offset: offset, IsolationLevel: kgo.ReadCommitted(), KeepControlRecords: true}, &fp, kgo.DefaultDecompressor(), nil)
		if fetched.Err != nil {
			t.Fatalf("decode fetch: %v", fetched.Err)
		}
		next := offset
		for _, r := range fetched.Records {
			if !r.Attrs.IsControl() {
				out = append(out, string(r.Value))
			}
			next = r.Offset + 1
		}
		if next == offset {
			// Only aborted batches came back: move past them.
			if _, err := batch.Split(fp.RecordBatches, func(h batch.Header, _ []byte) error {
				next = max(next, h.LastOffset()+1)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		offset = next
	}
	t.Fatal("read_committed did not reach the last stable offset in 1000 fetches")
	return nil
}
