package agent

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testwait"
)

// TestAcksAllWaitsForAStoppedFollower: a follower in the ISR stops while
// the replica lag limit is a minute. Its connections close with it, so
// the leader takes it out of the ISR a moment later (replica.LinkLostGrace)
// rather than after the lag limit, and only then answers an acks=all
// produce sent meanwhile: when the answer comes, the ISR is the leader
// alone. (With -tags strata_unsafe_ack the leader answers at once, with
// the follower still in the ISR, and this test fails.) Once the follower
// is back and caught up it rejoins.
func TestAcksAllWaitsForAStoppedFollower(t *testing.T) {
	c := startClusterWith(t, 2, func(cfg *Config) { cfg.ReplicaLagTimeMax = time.Minute })
	c.create("acks", 1, 2, nil)
	li := c.leaderOf("acks", 0)
	leader := c.agents[li]
	fi := 1 - li
	testwait.Until(t, 10*time.Second, func() bool { return len(localPartition(leader, "acks", 0).ISR()) == 2 }, "a full ISR")
	lcl := leader.client(t)
	if code, _ := produceRaw(t, lcl, "acks", 0, "before"); code != 0 {
		t.Fatalf("acks=all with both replicas up: %v", kerr.ErrorForCode(code))
	}
	c.agents[fi].stop(t)

	type answer struct {
		code   int16
		offset int64
		isr    []int32 // the leader's ISR right after the answer
	}
	answered := make(chan answer, 1)
	batch := recordBatch(t, "while-away")
	go func() {
		code, offset := produceWithTimeout(t, lcl, "acks", 0, batch, 60_000)
		answered <- answer{code, offset, localPartition(leader, "acks", 0).ISR()}
	}()
	// Well inside the minute of the lag limit, which alone would hold the
	// answer for the whole request timeout.
	var a answer
	select {
	case a = <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("acks=all not answered 20 s after the follower stopped: its closed connections did not take it out of the ISR")
	}
	if a.code != 0 {
		t.Fatalf("acks=all after the follower stopped: %v", kerr.ErrorForCode(a.code))
	}
	if len(a.isr) != 1 {
		t.Fatalf("acks=all answered (offset %d) with ISR %v: the stopped follower was still in it", a.offset, a.isr)
	}
	c.restart(fi)
	testwait.Until(t, 30*time.Second, func() bool { return len(localPartition(leader, "acks", 0).ISR()) == 2 }, "the follower back in the ISR")
	if end := localPartition(c.agents[fi], "acks", 0).LogEndOffset(); end <= a.offset {
		t.Fatalf("the follower rejoined the ISR with its log ending at %d, before the acknowledged offset %d", end, a.offset)
	}
}

// produceWithTimeout produces one batch (acks=all: the client's) with the
// request's timeout_ms set and returns the partition's error code and base
// offset. Safe to call from another goroutine: it reports a failed request
// with t.Errorf and code -1.
func produceWithTimeout(t *testing.T, cl *kgo.Client, topic string, partition int32, batch []byte, timeoutMs int32) (int16, int64) {
	req := kafkawire.Produce(topic, partition, batch, -1, time.Duration(timeoutMs)*time.Millisecond)
	resp, err := toSeed(t, cl, req)
	if err != nil {
		t.Errorf("produce: %v", err)
		return -1, -1
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset
}
