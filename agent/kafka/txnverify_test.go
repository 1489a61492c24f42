package kafka

// The wire server's part in KIP-890: the coordinator's answers mapped to
// Produce's codes, and the verify function a Produce hands the
// partition. The guards themselves are agent/partition's
// (txnguard_test.go there).

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/txn"
)

// TestVerifyError: each coordinator answer becomes the Produce code
// producers expect from a leader.
func TestVerifyError(t *testing.T) {
	other := errors.New("disk on fire")
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: the error itself
	}{
		{"verified", nil, nil},
		{"not in the transaction", txn.ErrInvalidTxnState, kerr.InvalidTxnState},
		{"coordinator busy", txn.ErrConcurrentTransactions, kerr.NotEnoughReplicas},
		{"coordinator moved", ErrNotCoordinator, kerr.NotEnoughReplicas},
		{"coordinator unloaded", txn.ErrClosed, kerr.NotEnoughReplicas},
		{"coordinator unreachable", errors.Join(ErrCoordinatorNotAvailable, errors.New("dial")), kerr.NotEnoughReplicas},
		{"coordinator loading", kerr.CoordinatorLoadInProgress, kerr.NotEnoughReplicas},
		{"network", kerr.NetworkException, kerr.NotEnoughReplicas},
		{"timeout", kerr.RequestTimedOut, kerr.NotEnoughReplicas},
		{"fenced", txn.ErrProducerFenced, kerr.InvalidProducerEpoch},
		{"fenced, from a peer", kerr.ProducerFenced, kerr.InvalidProducerEpoch},
		{"other", other, other},
	} {
		got := verifyError(tc.err)
		switch {
		case tc.err == nil && got != nil:
			t.Errorf("%s: %v, want nil", tc.name, got)
		case tc.err != nil && !errors.Is(got, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// recordingTxns answers VerifyTxn with err and records what it was asked.
type recordingTxns struct {
	unset
	err   error
	asked []string
}

func (r *recordingTxns) VerifyTxn(_ context.Context, id string, producerID int64, epoch int16, topic string, partition int32, add bool) error {
	r.asked = append(r.asked, fmt.Sprintf("%s %d/%d %s-%d add=%v", id, producerID, epoch, topic, partition, add))
	return r.err
}

// verifyingPartition is a leader that verifies every transactional
// batch, as a partition does for a producer with no open transaction.
type verifyingPartition struct {
	adminPartition
	appends int
}

func (p *verifyingPartition) AppendTransactional(ctx context.Context, raw []byte, _ int16, id *string, _ bool, verify VerifyTxn) (log.AppendResult, AppendWait, error) {
	h, err := batch.ParseHeader(raw)
	if err != nil {
		return log.AppendResult{}, nil, err
	}
	if h.IsTransactional() {
		if id == nil || verify == nil {
			return log.AppendResult{}, nil, fmt.Errorf("%w: no transactional id", kerr.TransactionalIDAuthorizationFailed)
		}
		if err := verify(ctx, h.ProducerID, h.ProducerEpoch); err != nil {
			return log.AppendResult{}, nil, err
		}
	}
	p.appends++
	return log.AppendResult{}, func(context.Context) error { return nil }, nil
}

func transactionalBatch(t *testing.T) []byte {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.Attributes = 7, 0, batch.AttrTransactional
	opts.BaseTimestamp, opts.BaseSequence = time.Now().UnixMilli(), 0
	raw, err := batch.Build(opts, []batch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestProduceVerifiesWithTheCoordinator: a transactional Produce hands
// the partition a verify function that asks the coordinator of the
// request's transactional id about that partition (adding it from v12
// on) and answers with Produce's codes; a produce without a
// transactional id gets none.
func TestProduceVerifiesWithTheCoordinator(t *testing.T) {
	resolved, err := metadata.Resolve(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := transactionalBatch(t)
	produce := func(version int16, id *string, verify error) (*recordingTxns, *verifyingPartition, int16) {
		t.Helper()
		b := newAdminBackend()
		p := &verifyingPartition{adminPartition: adminPartition{index: 0, leader: 1}}
		b.addTopic("t", nil).Partitions = []Partition{p}
		b.topics["t"].Resolved = resolved
		txns := &recordingTxns{unset: unset{"not modelled"}, err: verify}
		s := New(DefaultConfig(), Backends{Cluster: b, Topics: b, Transactions: txns}, nil, nil)
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TransactionID = version, -1, id
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: raw}}
		req.Topics = append(req.Topics, rt)
		resp, err := handleProduce(t.Context(), s, &request{key: 0, version: version}, req)
		if err != nil {
			t.Fatal(err)
		}
		return txns, p, resp.Topics[0].Partitions[0].ErrorCode
	}
	id := "tx"
	txns, p, code := produce(11, &id, nil)
	if code != 0 || p.appends != 1 || len(txns.asked) != 1 || txns.asked[0] != "tx 7/0 t-0 add=false" {
		t.Fatalf("v11 verified: code %v, %d appends, asked %q", kerr.ErrorForCode(code), p.appends, txns.asked)
	}
	txns, _, code = produce(12, &id, nil)
	if code != 0 || len(txns.asked) != 1 || txns.asked[0] != "tx 7/0 t-0 add=true" {
		t.Fatalf("v12 added: code %v, asked %q", kerr.ErrorForCode(code), txns.asked)
	}
	if _, p, code := produce(11, &id, txn.ErrInvalidTxnState); code != kerr.InvalidTxnState.Code || p.appends != 0 {
		t.Fatalf("not in the transaction: %v, %d appends; want INVALID_TXN_STATE and none", kerr.ErrorForCode(code), p.appends)
	}
	if _, _, code := produce(11, &id, txn.ErrConcurrentTransactions); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("coordinator busy: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
	if txns, _, code := produce(11, nil, nil); code != kerr.TransactionalIDAuthorizationFailed.Code || len(txns.asked) != 0 {
		t.Fatalf("no transactional id: %v, asked %q; want TRANSACTIONAL_ID_AUTHORIZATION_FAILED and no question", kerr.ErrorForCode(code), txns.asked)
	}
}
