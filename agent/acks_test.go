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
// the replica lag limit is long, so it stays in the ISR. An acks=all
// produce to the leader must not be answered while the follower is away,
// and once the follower is back and has copied the record, it is, with
// the record on the follower at that moment. (With -tags
// strata_unsafe_ack the leader answers at once and this test fails.)
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
	}
	answered := make(chan answer, 1)
	batch := recordBatch(t, "while-away")
	go func() {
		code, offset := produceWithTimeout(t, lcl, "acks", 0, batch, 60_000)
		answered <- answer{code, offset}
	}()
	// The follower is in the ISR and has not copied the record: no answer
	// may come. An observation window, not a synchronisation: any answer
	// within it is the failure.
	select {
	case a := <-answered:
		t.Fatalf("acks=all answered (code %v, offset %d) while an in-sync follower was stopped", kerr.ErrorForCode(a.code), a.offset)
	case <-time.After(2 * time.Second):
	}
	if isr := localPartition(leader, "acks", 0).ISR(); len(isr) != 2 {
		t.Fatalf("ISR %v: the stopped follower left it within the lag limit", isr)
	}
	c.restart(fi)
	var a answer
	select {
	case a = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("acks=all not answered 30 s after the follower came back")
	}
	// Read before anything else can move it: the follower held the record
	// when the leader acknowledged it.
	end := localPartition(c.agents[fi], "acks", 0).LogEndOffset()
	if a.code != 0 {
		t.Fatalf("acks=all after the follower came back: %v", kerr.ErrorForCode(a.code))
	}
	if end <= a.offset {
		t.Fatalf("acknowledged offset %d, but the follower's log ends at %d", a.offset, end)
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
