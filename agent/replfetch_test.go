package agent

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testwait"
)

// fetchRequests is how many Fetch requests (API key 1) the agents of c
// have answered, consumers' and followers' alike, and how many of them
// were incremental fetches of a session.
func (c *cluster) fetchRequests() (all, incremental float64) {
	c.t.Helper()
	for _, a := range c.agents {
		if a.cancel != nil {
			all += counterValue(c.t, a, "strata_kafka_requests_total", "api", "1")
			incremental += counterValue(c.t, a, "strata_kafka_fetch_requests_total", "session", "incremental")
		}
	}
	return all, incremental
}

// produceEveryPartition produces one acks=all record to each partition of
// topic, all at once, and fails unless every one is acknowledged.
func (c *cluster) produceEveryPartition(topic string, partitions int32) {
	c.t.Helper()
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rs []*kgo.Record
	for i := range partitions {
		rs = append(rs, &kgo.Record{Partition: i, Value: []byte(fmt.Sprint("v", i))})
	}
	if err := cl.ProduceSync(ctxT(c.t), rs...).FirstErr(); err != nil {
		c.t.Fatalf("acks=all produce to every partition of %s: %v", topic, err)
	}
}

// TestFollowerFetchesAllPartitionsOfALeaderTogether: a follower fetches
// every partition it follows from one leader in one Fetch, so two agents
// with 100 idle partitions at RF 2 exchange a few long polls a second
// between them, not one per partition (which is 100 partitions × 2 long
// polls a second: 2,000 in the 10 s counted), and in fetch sessions, so
// that the quiet partitions are left out of the requests. Every partition
// still takes an acks=all record, and every follower stays in the ISR
// while idle.
func TestFollowerFetchesAllPartitionsOfALeaderTogether(t *testing.T) {
	const partitions = 100
	c := startCluster(t, 2)
	c.create("many", partitions, 2, nil)
	c.produceEveryPartition("many", partitions)
	// Let the catch-up fetches of the records end: what is counted is
	// the idle exchange.
	time.Sleep(time.Second)
	before, beforeIncremental := c.fetchRequests()
	const window = 10 * time.Second
	time.Sleep(window)
	after, afterIncremental := c.fetchRequests()
	n, incremental := after-before, afterIncremental-beforeIncremental
	t.Logf("%v Fetch requests (%v incremental) in %v between two agents following %d idle partitions", n, incremental, window, partitions)
	if n >= 200 {
		t.Errorf("%v Fetch requests in %v for %d idle partitions: the followers fetch partition by partition", n, window, partitions)
	}
	if incremental < n*9/10 {
		t.Errorf("%v of %v Fetch requests were incremental: the followers fetch without a session", incremental, n)
	}
	held := 0.0
	for _, a := range c.agents {
		held += counterValue(t, a, "strata_kafka_fetch_session_partitions")
		if n := a.fetchers.Loops(); n != 1 {
			t.Errorf("agent %d runs %d fetch loops, want one (for the other agent)", a.id, n)
		}
	}
	if held < partitions {
		t.Errorf("the leaders' fetch sessions hold %v partitions, want all %d", held, partitions)
	}
	for i := range int32(partitions) {
		li := c.leaderOf("many", i)
		if isr := localPartition(c.agents[li], "many", i).ISR(); len(isr) != 2 {
			t.Errorf("partition %d: ISR %v after %v idle, want both replicas", i, isr, window)
		}
	}
}

// TestReplicaAcksAllWithoutWaitingOutALongPoll: on idle partitions at RF
// 2, whose follower's fetch is parked in the leader's long poll, an
// acks=all produce is answered as soon as the follower copied the record:
// the leader answers the parked fetch at the append, rather than when the
// long poll (500 ms) runs out. A leader that did not wake the fetch would
// answer each produce after what is left of the poll, half of it on
// average; the median over 20 produces sets the two apart on a busy
// machine too.
func TestReplicaAcksAllWithoutWaitingOutALongPoll(t *testing.T) {
	const partitions = 20
	c := startCluster(t, 2)
	c.create("acks", partitions, 2, nil)
	c.produceEveryPartition("acks", partitions)
	var took []time.Duration
	for i := range int32(partitions) {
		li := c.leaderOf("acks", i)
		cl := c.agents[li].client(t)
		// Idle for longer than a long poll: the follower's fetch is parked.
		time.Sleep(600 * time.Millisecond)
		start := time.Now()
		if code, _ := produceRaw(t, cl, "acks", i, fmt.Sprint("w", i)); code != 0 {
			t.Fatalf("acks=all to partition %d: %v", i, kerr.ErrorForCode(code))
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	median := took[len(took)/2]
	t.Logf("acks=all latency on idle RF 2 partitions: median %v, max %v", median, took[len(took)-1])
	if median > 100*time.Millisecond {
		t.Errorf("median acks=all latency %v on idle partitions (all: %v): the followers' long polls are not answered at the append", median, took)
	}
}

// replicaFetch is a follower's Fetch (v12, no session) of topic's
// partitions, each at offsets[i], as agent replicaID sends it to their
// leader.
func replicaFetch(topic string, replicaID int32, leader *running, partitions []int32, offsets []int64, maxWait time.Duration, maxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.SessionID, req.SessionEpoch = 12, replicaID, 0, -1
	req.MinBytes, req.MaxBytes, req.MaxWaitMillis = 1, maxBytes, int32(maxWait.Milliseconds())
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for i, idx := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = idx, offsets[i], 1<<20
		rp.CurrentLeaderEpoch = localPartition(leader, topic, idx).LeaderEpoch()
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestLeaderAnswersAFollowerFetchOfManyPartitions: the leader's side of a
// follower's multi-partition Fetch. Its long poll answers as soon as any
// one of the partitions is written to (not when the poll runs out), and
// a response whose byte limit the first partition used up still reads
// and records every other partition (each carries the HW), so that a
// follower that the busy partitions crowd out of the answers is not
// taken for silent.
func TestLeaderAnswersAFollowerFetchOfManyPartitions(t *testing.T) {
	const partitions = 6
	c := startCluster(t, 2)
	c.create("lf", partitions, 2, nil)
	c.produceEveryPartition("lf", partitions)
	led := map[int][]int32{}
	for i := range int32(partitions) {
		li := c.leaderOf("lf", i)
		led[li] = append(led[li], i)
	}
	li := 0
	if len(led[1]) > len(led[0]) {
		li = 1
	}
	leader, follower := c.agents[li], c.agents[1-li]
	parts := led[li]
	if len(parts) < 2 {
		t.Fatalf("agent %d leads %v: want two partitions or more", leader.id, parts)
	}
	cl := leader.client(t)

	// At the log ends: parked until one partition is written to.
	ends := make([]int64, len(parts))
	for i, idx := range parts {
		ends[i] = localPartition(leader, "lf", idx).LogEndOffset()
	}
	const wait = 10 * time.Second
	last := parts[len(parts)-1]
	// The write runs beside the fetch, and the test waits for its answer
	// before it ends: the fetch wakes at the append, before the leader's
	// fsync acknowledges the write, and a client closed by the test's
	// cleanup meanwhile failed it.
	one := leader.client(t, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	wrote := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // most likely parked by then; answered at once otherwise
		req := kafkawire.Produce("lf", last, recordBatch(t, "wake"), 1, 10*time.Second)
		resp, err := one.Request(context.Background(), req)
		if err == nil {
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				err = kerr.ErrorForCode(code)
			}
		}
		wrote <- err
	}()
	defer func() {
		if err := <-wrote; err != nil {
			t.Errorf("the write that wakes the fetch: %v", err)
		}
	}()
	start := time.Now()
	raw, err := toSeed(t, cl, replicaFetch("lf", follower.id, leader, parts, ends, wait, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	resp := raw.(*kmsg.FetchResponse)
	if took > wait/2 {
		t.Errorf("the fetch was answered after %v of its %v long poll, though partition %d was written to", took, wait, last)
	}
	for _, fp := range resp.Topics[0].Partitions {
		if fp.ErrorCode != 0 {
			t.Errorf("partition %d: %v", fp.Partition, kerr.ErrorForCode(fp.ErrorCode))
		}
		if got := len(fp.RecordBatches) > 0; got != (fp.Partition == last) {
			t.Errorf("partition %d: records %v, want them only on the one written to (%d)", fp.Partition, got, last)
		}
	}

	// From the last record of each, with room for one batch: one
	// partition has records, every other one was read all the same.
	for i, idx := range parts {
		ends[i] = localPartition(leader, "lf", idx).LogEndOffset() - 1
	}
	raw, err = toSeed(t, cl, replicaFetch("lf", follower.id, leader, parts, ends, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	withRecords := 0
	for _, fp := range raw.(*kmsg.FetchResponse).Topics[0].Partitions {
		if fp.ErrorCode != 0 || fp.HighWatermark < 0 {
			t.Errorf("partition %d past the byte limit: %v, HW %d; want it read", fp.Partition, kerr.ErrorForCode(fp.ErrorCode), fp.HighWatermark)
		}
		if len(fp.RecordBatches) > 0 {
			withRecords++
		}
	}
	if withRecords != 1 {
		t.Errorf("%d partitions with records in an answer limited to 1 byte, want the first one only", withRecords)
	}
}

// TestFollowersChangeLeadersTogether: three agents follow each other's
// partitions, one fetch loop per leader. An agent stops: the partitions
// it led move to new leaders, and their followers leave one loop for
// another; it comes back and follows, and every partition, on every
// agent, ends with the acknowledged records and a full ISR.
func TestFollowersChangeLeadersTogether(t *testing.T) {
	const partitions = 12
	c := startCluster(t, 3)
	c.create("move", partitions, 3, nil)
	c.produceEveryPartition("move", partitions)
	c.agents[0].stop(t)
	c.produceEveryPartition("move", partitions)
	c.restart(0)
	c.produceEveryPartition("move", partitions)
	for i := range int32(partitions) {
		li := c.leaderOf("move", i)
		testwait.Until(t, 20*time.Second, func() bool {
			return len(localPartition(c.agents[li], "move", i).ISR()) == 3
		}, "partition %d's ISR to hold all three agents", i)
		want := logBatches(t, localPartition(c.agents[li], "move", i))
		if len(want) != 3 {
			t.Errorf("partition %d: the leader holds %d batches, want the 3 acknowledged", i, len(want))
		}
		for _, a := range c.agents {
			p := localPartition(a, "move", i)
			testwait.Until(t, 10*time.Second, func() bool { return p.LogEndOffset() == localPartition(c.agents[li], "move", i).LogEndOffset() }, "agent %d to catch up on partition %d", a.id, i)
			if got := logBatches(t, p); !slices.EqualFunc(got, want, bytes.Equal) {
				t.Errorf("partition %d: agent %d's log differs from the leader's", i, a.id)
			}
		}
	}
}
