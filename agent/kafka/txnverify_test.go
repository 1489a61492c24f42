package kafka

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/txn"
)

// verifyingTxns answers VerifyTxn with verify.
type verifyingTxns struct {
	unset
	verify func() error
}

func (v verifyingTxns) VerifyTxn(context.Context, string, int64, int16, string, int32, bool) error {
	return v.verify()
}

// txnPartition counts appends; open says whether the producer's
// transaction is open in its log.
type txnPartition struct {
	inertPartition
	open    bool
	appends int
}

func (p *txnPartition) TxnOpen(int64, int16) bool { return p.open }
func (p *txnPartition) Append([]byte, int16) (log.AppendResult, AppendWait, error) {
	p.appends++
	return log.AppendResult{}, func(context.Context) error { return nil }, nil
}

func transactionalBatch(t *testing.T) []byte {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.Attributes = 7, 0, batch.AttrTransactional
	raw, err := batch.Build(opts, []batch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestVerificationGuard: a transactional batch is appended once the
// coordinator verifies it, refused when it does not, and refused when
// the producer's marker lands while the verification is under way (the
// guard), while a batch joining an open transaction is not verified.
func TestVerificationGuard(t *testing.T) {
	id := "tx"
	raw := transactionalBatch(t)
	run := func(verify func(s *Server) error, open bool) (*txnPartition, error) {
		var s *Server
		s = New(DefaultConfig(), Backends{Transactions: verifyingTxns{verify: func() error { return verify(s) }}}, nil, nil)
		p := &txnPartition{open: open}
		_, _, err := s.appendVerified(t.Context(), &id, false, "t", 0, p, raw, -1)
		return p, err
	}
	if p, err := run(func(*Server) error { return nil }, false); err != nil || p.appends != 1 {
		t.Fatalf("verified: %v, %d appends", err, p.appends)
	}
	notIn := func(*Server) error { return txn.ErrInvalidTxnState }
	if p, err := run(notIn, false); !errors.Is(err, kerr.InvalidTxnState) || p.appends != 0 {
		t.Fatalf("not in the transaction: %v, %d appends; want INVALID_TXN_STATE and none", err, p.appends)
	}
	if p, err := run(notIn, true); err != nil || p.appends != 1 {
		t.Fatalf("joining an open transaction: %v, %d appends; want no verification", err, p.appends)
	}
	markerMeanwhile := func(s *Server) error {
		return s.AppendTxnMarker("t", 0, 7, 0, func() error { return nil })
	}
	if p, err := run(markerMeanwhile, false); !errors.Is(err, kerr.InvalidTxnState) || p.appends != 0 {
		t.Fatalf("marker during the verification: %v, %d appends; want INVALID_TXN_STATE and none", err, p.appends)
	}
	busy := func(*Server) error { return txn.ErrConcurrentTransactions }
	if _, err := run(busy, false); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("coordinator busy: %v, want NOT_ENOUGH_REPLICAS", err)
	}
}

// TestAddGuard (KIP-890 part 2): while a Produce v12's partition is
// added, the marker of the producer's previous transaction (at the
// batch's epoch, the bumped one) may land: the batch is still appended.
// A marker at a later epoch ended the transaction the partition was
// added to: the batch is refused with NOT_ENOUGH_REPLICAS, so that the
// producer retries and the coordinator decides again.
func TestAddGuard(t *testing.T) {
	id := "tx"
	raw := transactionalBatch(t) // epoch 0
	run := func(markerEpoch int16) (*txnPartition, error) {
		var s *Server
		add := func() error { return s.AppendTxnMarker("t", 0, 7, markerEpoch, func() error { return nil }) }
		s = New(DefaultConfig(), Backends{Transactions: verifyingTxns{verify: add}}, nil, nil)
		p := &txnPartition{}
		_, _, err := s.appendVerified(t.Context(), &id, true, "t", 0, p, raw, -1)
		return p, err
	}
	if p, err := run(0); err != nil || p.appends != 1 {
		t.Fatalf("previous transaction's marker during the add: %v, %d appends; want the batch appended", err, p.appends)
	}
	if p, err := run(1); !errors.Is(err, kerr.NotEnoughReplicas) || p.appends != 0 {
		t.Fatalf("own transaction's marker during the add: %v, %d appends; want NOT_ENOUGH_REPLICAS and none", err, p.appends)
	}
}
