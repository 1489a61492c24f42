package agent

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// commitOne commits one record per partition of topic in a transaction of
// cl and returns the producer id and epoch it used. Each partition's
// first batch is verified with the coordinator, so this is also the
// check that verification lets a normal producer through.
func commitOne(t *testing.T, cl *kgo.Client, topic string, partitions int32) (int64, int16) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range partitions {
		r := &kgo.Record{Topic: topic, Partition: i, Value: fmt.Appendf(nil, "committed-%d", i)}
		if err := cl.ProduceSync(ctxT(t), r).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d: %v", topic, i, err)
		}
	}
	if err := cl.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	id, epoch, err := cl.ProducerID(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return id, epoch
}

// zombieProduce sends, as a late produce of a zombie would, a
// transactional batch of producer id/epoch (sequence seq) straight to
// agent leader, for a transaction that no longer includes the partition,
// and returns the partition's error code.
func zombieProduce(t *testing.T, cl *kgo.Client, leader int32, txnID, topic string, partition int32, id int64, epoch int16, seq int32) int16 {
	t.Helper()
	return rawTxnProduce(t, cl, leader, txnID, topic, partition, id, epoch, seq, "zombie")
}

// rawTxnProduce sends one transactional batch of producer id/epoch
// (sequence seq) holding value straight to agent leader, and returns the
// partition's error code.
func rawTxnProduce(t *testing.T, cl *kgo.Client, leader int32, txnID, topic string, partition int32, id int64, epoch int16, seq int32, value string) int16 {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = id, epoch, seq
	opts.Attributes = batch.AttrTransactional
	raw, err := batch.Build(opts, []batch.Record{{Value: []byte(value)}})
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = &txnID
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// NOT_ENOUGH_REPLICAS is the verification's retriable answer while
	// the coordinator is busy (the committed transaction's markers may
	// still be landing) or moving; a producer retries it, and so does
	// this one, for a bounded time.
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := req.RequestWith(ctxT(t), cl.Broker(int(leader)))
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code != kerr.NotEnoughReplicas.Code || time.Now().After(deadline) {
			return code
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawClientOpts pins Produce at v11, the last that verifies a
// transactional batch (KIP-890 part 1) rather than adding its partition
// to the transaction (part 2, v12+).
func rawClientOpts() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11)
	return kgo.MaxVersions(v)
}

// TestTxnVerifyRefusesUnaddedPartition (KIP-890 part 1): after a
// transactional producer commits, a late transactional batch of its
// producer id and epoch is refused with INVALID_TXN_STATE, so no
// transaction opens that no coordinator would end, and the partition's
// last stable offset stays at its high watermark.
func TestTxnVerifyRefusesUnaddedPartition(t *testing.T) {
	r := start(t, txnConfig(t), nil)
	createTopic(t, r.client(t), "txn-verify", 1, nil)
	id, epoch := commitOne(t, txnClient(t, r, "tx-verify"), "txn-verify", 1)
	p := localPartition(r, "txn-verify", 0)
	waitStable(t, p)
	hw := p.HighWatermark()

	code := zombieProduce(t, r.client(t, rawClientOpts()), r.id, "tx-verify", "txn-verify", 0, id, epoch, 1)
	if code != kerr.InvalidTxnState.Code {
		t.Fatalf("late transactional produce answered %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if got, lso := p.HighWatermark(), p.LocalLog().LastStableOffset(p.HighWatermark()); got != hw || lso != hw {
		t.Fatalf("high watermark %d (was %d), last stable offset %d: a transaction was opened", got, hw, lso)
	}
	if got := readToStable(t, r, "txn-verify", 0); !slices.Equal(got, []string{"committed-0"}) {
		t.Fatalf("read_committed read %q", got)
	}
}

// TestTxnVerifyRemoteCoordinator: the same on three agents, where the
// partition's leader asks the coordinator on another agent
// (AddPartitionsToTxn v4 with VerifyOnly over the inter-agent listener):
// the producer's own batches pass, the zombie's is refused.
func TestTxnVerifyRemoteCoordinator(t *testing.T) {
	c := startTxnCluster(t, 3, nil)
	c.create("txn-vr", 3, 1, nil)
	cl := c.client(kgo.TransactionalID("tx-verify-remote"), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	id, epoch := commitOne(t, cl, "txn-vr", 3)
	coord := c.leaderOf(txnTopic, 0)
	target := int32(-1)
	for i := range int32(3) {
		if c.leaderOf("txn-vr", i) != coord {
			target = i
			break
		}
	}
	if target < 0 {
		t.Skip("every partition is led by the coordinator's agent")
	}
	leader := c.agents[c.leaderOf("txn-vr", target)]
	p := localPartition(leader, "txn-vr", target)
	waitStable(t, p)
	hw := p.HighWatermark()
	code := zombieProduce(t, c.client(rawClientOpts()), leader.id, "tx-verify-remote", "txn-vr", target, id, epoch, 1)
	if code != kerr.InvalidTxnState.Code {
		t.Fatalf("late transactional produce answered %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if got, lso := p.HighWatermark(), p.LocalLog().LastStableOffset(p.HighWatermark()); got != hw || lso != hw {
		t.Fatalf("high watermark %d (was %d), last stable offset %d: a transaction was opened", got, hw, lso)
	}
}
