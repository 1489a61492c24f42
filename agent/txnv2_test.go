package agent

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/internal/testwait"
)

// tv2ClientOpts lifts the Kafka 3.0 cap of the tests' clients (see
// running.client), so that franz-go sees transaction.version 2 and the
// request versions of KIP-890 part 2, while Produce stays at v12, the
// last that names topics (for the raw requests).
func tv2ClientOpts() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 12)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 5)
	return kgo.MaxVersions(v)
}

// retryTxn sends req until its error code (from code) is not one a
// client retries while a transaction's markers land or a coordinator
// loads, for a bounded time, and returns the last response.
func retryTxn[R kmsg.Response](t *testing.T, cl *kgo.Client, req kmsg.Request, code func(R) int16) R {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := cl.Request(ctxT(t), req)
		if err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		r := resp.(R)
		switch code(r) {
		case kerr.ConcurrentTransactions.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code,
			kerr.NotCoordinator.Code, kerr.NotEnoughReplicas.Code:
			if time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				continue
			}
		}
		return r
	}
}

// TestTxnV2EpochBumpPerTransaction (KIP-890 part 2): the agent finalizes
// transaction.version 2, franz-go negotiates it, and every committed
// transaction bumps the producer epoch by one: EndTxn v5 answers the new
// epoch, the markers carry it, and DescribeTransactions and
// DescribeProducers show it.
func TestTxnV2EpochBumpPerTransaction(t *testing.T) {
	r := start(t, txnConfig(t), nil)
	createTopic(t, r.client(t), "tv2", 1, nil)

	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "strata-test", "1"
	resp, err := av.RequestWith(ctxT(t), r.client(t))
	if err != nil {
		t.Fatal(err)
	}
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	if resp.FinalizedFeaturesEpoch < 0 || finalized["transaction.version"] != 2 {
		t.Fatalf("ApiVersions v%d finalized %v at epoch %d, want transaction.version 2", resp.Version, finalized, resp.FinalizedFeaturesEpoch)
	}

	cl := txnClient(t, r, "tx-v2", tv2ClientOpts())
	// franz-go opts a transaction into version 2 at its Begin if it
	// already knows the cluster's features: connect first.
	if err := cl.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	var epochs []int16
	adm := kadm.NewClient(r.client(t))
	for i := range 3 {
		epoch := commitValue(t, cl, "tv2", "v2-"+string(rune('a'+i)))
		epochs = append(epochs, epoch)
		d, err := adm.DescribeTransactions(ctxT(t), "tx-v2")
		if err != nil {
			t.Fatal(err)
		}
		if s := d["tx-v2"]; s.ProducerEpoch != epoch {
			t.Fatalf("after commit %d the client holds epoch %d, the coordinator %+v", i, epoch, s)
		}
	}
	if epochs[1] != epochs[0]+1 || epochs[2] != epochs[1]+1 {
		t.Fatalf("epochs after each commit %v, want one more per transaction", epochs)
	}
	p := localPartition(r, "tv2", 0)
	waitStable(t, p)
	// Each transaction's data at the epoch it began with, its marker at
	// the bumped one, which the next transaction then uses.
	type step struct {
		control bool
		epoch   int16
	}
	var got, want []step
	for _, e := range readLog(t, p) {
		got = append(got, step{e.control, e.epoch})
	}
	for _, e := range epochs {
		want = append(want, step{false, e - 1}, step{true, e})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("log (control, epoch) %v, want %v", got, want)
	}
	described, err := adm.DescribeProducers(ctxT(t), kadm.TopicsSet{"tv2": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, dp := range described.SortedProducers() {
		if dp.ProducerEpoch != epochs[2] {
			t.Fatalf("DescribeProducers: %+v, want epoch %d (the last marker's)", dp, epochs[2])
		}
	}
	if got := readStable(t, r, "tv2", 0, 3); !slices.Equal(got, []string{"v2-a", "v2-b", "v2-c"}) {
		t.Fatalf("read_committed read %q", got)
	}
}

// TestTxnV2RawRequests (KIP-890 part 2, request by request): a Produce
// v12 to a partition never added and a TxnOffsetCommit v5 without
// AddOffsetsToTxn join the transaction; EndTxn v5 answers the bumped
// epoch and commits both (the offset visible only after the commit); a
// retry of that EndTxn at the old epoch succeeds; the old epoch is then
// fenced (INVALID_PRODUCER_EPOCH to a Produce); an abort with nothing
// open bumps the epoch again.
func TestTxnV2RawRequests(t *testing.T) {
	r := start(t, txnConfig(t), nil)
	createTopic(t, r.client(t), "tv2-raw", 1, nil)
	cl := r.client(t, tv2ClientOpts())
	const txnID, group = "tx-raw", "g-raw"

	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 20_000
	ir := retryTxn(t, cl, init, func(r *kmsg.InitProducerIDResponse) int16 { return r.ErrorCode })
	if ir.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ir.ErrorCode))
	}
	pid, e0 := ir.ProducerID, ir.ProducerEpoch

	if code := rawTxnProduce(t, cl, r.id, txnID, "tv2-raw", 0, pid, e0, 0, "raw-1"); code != 0 {
		t.Fatalf("Produce v12 to a partition never added: %v, want it added and written", kerr.ErrorForCode(code))
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = txnID, group, pid, e0, -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "tv2-raw"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.LeaderEpoch = 0, 1, -1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr := retryTxn(t, cl, commit, func(r *kmsg.TxnOffsetCommitResponse) int16 { return r.Topics[0].Partitions[0].ErrorCode })
	if code := cr.Topics[0].Partitions[0].ErrorCode; code != 0 || cr.Version != 5 {
		t.Fatalf("TxnOffsetCommit v%d without AddOffsetsToTxn: %v", cr.Version, kerr.ErrorForCode(code))
	}
	adm := kadm.NewClient(r.client(t))
	offsetOf := func() int64 {
		fetched, err := adm.FetchOffsets(ctxT(t), group)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := fetched.Lookup("tv2-raw", 0); ok && o.Err == nil {
			return o.At
		}
		return -1
	}
	if at := offsetOf(); at != -1 {
		t.Fatalf("offset %d visible before the commit", at)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, pid, e0, true
	er := retryTxn(t, cl, end, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
	if er.ErrorCode != 0 || er.Version != 5 || er.ProducerID != pid || er.ProducerEpoch != e0+1 {
		t.Fatalf("EndTxn v%d: %v, producer %d epoch %d; want %d epoch %d", er.Version, kerr.ErrorForCode(er.ErrorCode),
			er.ProducerID, er.ProducerEpoch, pid, e0+1)
	}
	// The answer was lost: the client retries at the epoch it sent.
	er = retryTxn(t, cl, end, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
	if er.ErrorCode != 0 || er.ProducerEpoch != e0+1 {
		t.Fatalf("retried EndTxn: %v epoch %d, want success at %d", kerr.ErrorForCode(er.ErrorCode), er.ProducerEpoch, e0+1)
	}
	p := localPartition(r, "tv2-raw", 0)
	waitStable(t, p)
	if got := readToStable(t, r, "tv2-raw", 0); !slices.Equal(got, []string{"raw-1"}) {
		t.Fatalf("read_committed read %q", got)
	}
	testwait.Until(t, 20*time.Second, func() bool { return offsetOf() == 1 }, "the committed offset to be visible")
	if entries := readLog(t, p); len(entries) != 2 || !entries[1].control || entries[1].epoch != e0+1 {
		t.Fatalf("log %+v, want the batch and its marker at epoch %d", entries, e0+1)
	}

	// A zombie of the committed transaction (the epoch it ran at) is
	// fenced, and its batch is not written.
	hw := p.HighWatermark()
	if code := rawTxnProduce(t, cl, r.id, txnID, "tv2-raw", 0, pid, e0, 1, "zombie"); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie Produce at the old epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if got := p.HighWatermark(); got != hw {
		t.Fatalf("high watermark %d after the zombie's produce, was %d", got, hw)
	}

	abort := kmsg.NewPtrEndTxnRequest()
	abort.TransactionalID, abort.ProducerID, abort.ProducerEpoch = txnID, pid, e0+1
	ar := retryTxn(t, cl, abort, func(r *kmsg.EndTxnResponse) int16 { return r.ErrorCode })
	if ar.ErrorCode != 0 || ar.ProducerEpoch != e0+2 {
		t.Fatalf("abort with nothing open: %v epoch %d, want success at %d", kerr.ErrorForCode(ar.ErrorCode), ar.ProducerEpoch, e0+2)
	}
	testwait.Until(t, 20*time.Second, func() bool {
		d, err := adm.DescribeTransactions(ctxT(t), txnID)
		s := d[txnID]
		return err == nil && s.State == "CompleteAbort" && s.ProducerEpoch == e0+2
	}, "the empty abort to complete at epoch %d", e0+2)
}

// TestTxnVersionPinnedTo1: under --transaction-version=1 (a rolling
// upgrade from a release without KIP-890 part 2) franz-go stays on
// transaction version 1: its epoch does not move between transactions.
func TestTxnVersionPinnedTo1(t *testing.T) {
	cfg := txnConfig(t)
	cfg.Kafka.TransactionVersion = 1
	r := start(t, cfg, nil)
	createTopic(t, r.client(t), "tv1", 1, nil)
	cl := txnClient(t, r, "tx-v1", tv2ClientOpts())
	if err := cl.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	var epochs []int16
	for i := range 2 {
		epochs = append(epochs, commitValue(t, cl, "tv1", "v1-"+string(rune('a'+i))))
	}
	if epochs[0] != epochs[1] {
		t.Fatalf("epochs after each commit %v, want them equal (transaction version 1)", epochs)
	}
	if got := readStable(t, r, "tv1", 0, 2); !slices.Equal(got, []string{"v1-a", "v1-b"}) {
		t.Fatalf("read_committed read %q", got)
	}
}

// TestTxnV2RemoteCoordinator: on three agents, a leader whose
// transaction coordinator runs elsewhere adds a Produce v12's partition
// over the inter-agent listener (AddPartitionsToTxn v5); every commit
// bumps the epoch; the zombie at the previous epoch is fenced there too.
func TestTxnV2RemoteCoordinator(t *testing.T) {
	c := startTxnCluster(t, 3, nil)
	c.create("tv2-r", 3, 1, nil)
	cl := c.client(kgo.TransactionalID("tx-v2-remote"), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), tv2ClientOpts())
	if err := cl.Ping(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	id, first := commitOne(t, cl, "tv2-r", 3)
	_, second := commitOne(t, cl, "tv2-r", 3)
	if second != first+1 {
		t.Fatalf("epochs after two commits %d, %d; want one more", first, second)
	}
	coord := c.leaderOf(txnTopic, 0)
	target := int32(-1)
	for i := range int32(3) {
		if c.leaderOf("tv2-r", i) != coord {
			target = i
			break
		}
	}
	if target < 0 {
		t.Skip("every partition is led by the coordinator's agent")
	}
	leader := c.agents[c.leaderOf("tv2-r", target)]
	p := localPartition(leader, "tv2-r", target)
	waitStable(t, p)
	var markerEpochs []int16
	for _, e := range readLog(t, p) {
		if e.control {
			markerEpochs = append(markerEpochs, e.epoch)
		}
	}
	if !slices.Equal(markerEpochs, []int16{first, second}) {
		t.Fatalf("markers on %d (remote from the coordinator) at epochs %v, want %v", target, markerEpochs, []int16{first, second})
	}
	code := rawTxnProduce(t, c.client(tv2ClientOpts()), leader.id, "tx-v2-remote", "tv2-r", target, id, first, 1, "zombie")
	if code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie Produce v12 at the previous epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if got := readStable(t, leader, "tv2-r", target, 2); len(got) != 2 {
		t.Fatalf("read_committed read %q, want the two committed records", got)
	}
}

// commitValue produces value to topic in a transaction, commits it and
// returns the producer epoch the client holds afterwards.
func commitValue(t *testing.T, cl *kgo.Client, topic, value string) int16 {
	t.Helper()
	if err := produceInTxn(t, cl, topic, value); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctxT(t), kgo.TryCommit); err != nil {
		t.Fatalf("commit %s: %v", value, err)
	}
	_, epoch, err := cl.ProducerID(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return epoch
}
