package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/coord"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/agent/topics"
	"github.com/strata-streaming/strata/internal/testwait"
)

// TestDisklessEpochOfEachCoordinator: one agent leads two partitions of
// __diskless_state at different leader epochs; Metadata gives each
// diskless partition the epoch of its own coordinator's partition, after
// commits that went to both in one request and while the index follower
// polls both in one request. An epoch borrowed from the other coordinator
// goes back when the next answer is right, and a client that compares
// epochs (KIP-320) refuses the answer and keeps its old leader: found by
// internal/chaos's epoch sampler (TestChaosDiskless).
func TestDisklessEpochOfEachCoordinator(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Diskless.StatePartitions = 2
	cfg.Diskless.Writer.CommitInterval = 100 * time.Millisecond
	a := start(t, cfg, nil)
	const topic, partitions = "dle", 8
	id := createTopic(t, a.client(t), topic, partitions, map[string]string{metadata.DisklessEnable: "true"})
	coordOf := func(p int32) int32 { return coord.DisklessPartition(id, p, 2) }
	var groups [2]int
	for p := range int32(partitions) {
		groups[coordOf(p)]++
	}
	if groups[0] == 0 || groups[1] == 0 {
		t.Fatalf("partitions per coordinator %v: the test needs both", groups)
	}

	cl := a.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll := func(round int) {
		t.Helper()
		var recs []*kgo.Record
		for p := range int32(partitions) {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "r%d-p%d", round, p)})
		}
		if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", round, err)
		}
	}
	produceAll(0) // creates __diskless_state

	// The agent takes partition 1 of __diskless_state over from itself,
	// in the next epoch, as a restarted leader does.
	var sp *partition.Partition
	testwait.Until(t, 10*time.Second, func() bool {
		sp = localPartition(a, topics.DisklessState, 1)
		return sp != nil && localPartition(a, topics.DisklessState, 0) != nil
	}, "__diskless_state to be open")
	st, etag := sp.StateAndETag()
	next := st
	next.LeaderEpoch, next.StateEpoch = st.LeaderEpoch+1, st.StateEpoch+1
	if err := a.ctl.TakeOver(ctxT(t), sp, st, next, etag, "test: a new epoch"); err != nil {
		t.Fatal(err)
	}
	epochOf := func(i int32) int32 { return localPartition(a, topics.DisklessState, i).LeaderEpoch() }
	if epochOf(0) == epochOf(1) {
		t.Fatalf("__diskless_state-0 and -1 both at epoch %d", epochOf(0))
	}
	want := func(p int32) int32 { return epochOf(coordOf(p)) }
	checkEpochs := func(when string) {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, mp := range resp.Topics[0].Partitions {
			if w := want(mp.Partition); mp.LeaderEpoch != w {
				t.Fatalf("%s: %s-%d: Metadata says leader epoch %d; its coordinator, __diskless_state-%d, is at %d",
					when, topic, mp.Partition, mp.LeaderEpoch, coordOf(mp.Partition), w)
			}
		}
	}
	// One request to both coordinators' partitions: one object, one
	// commit share per coordinator agent.
	produceAll(1)
	checkEpochs("after the commits")

	// Readers make the index follower poll both coordinators' partitions
	// in one request, with one Coord.
	cons := a.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
		cons.PollFetches(ctx)
		cancel()
		checkEpochs("while reading")
	}
}
