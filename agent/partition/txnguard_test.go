package partition

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log/batch"
)

// transactionalBatch is one transactional record of producer 7 at epoch,
// sequence seq.
func transactionalBatch(t *testing.T, epoch int16, seq int32) []byte {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.Attributes = 7, epoch, batch.AttrTransactional
	opts.BaseTimestamp, opts.BaseSequence = time.Now().UnixMilli(), seq
	raw, err := batch.Build(opts, []batch.Record{{Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// dataBatches counts the data batches (markers aside) in p's log.
func dataBatches(t *testing.T, p *Partition) int {
	t.Helper()
	b, err := p.LocalLog().Read(0, 1<<20, p.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() {
			n++
		}
		b = b[h.Size():]
	}
	return n
}

// appendTxn appends raw as a Produce of transactional id "tx" does, and
// waits for its acks.
func appendTxn(p *Partition, raw []byte, add bool, verify dataplane.VerifyTxn) error {
	id := "tx"
	_, wait, err := p.AppendTransactional(context.Background(), raw, -1, &id, add, verify)
	if err == nil {
		err = wait(context.Background())
	}
	return err
}

// marker appends producer 7's abort marker at epoch, as the coordinator's
// WriteTxnMarkers does.
func marker(p *Partition, epoch int16) error {
	wait, err := p.AppendTxnMarker(7, epoch, false, 0)
	if err == nil {
		err = wait(context.Background())
	}
	return err
}

var errNotIn = errors.New("partition test: not in the transaction")

// TestVerificationGuard: a transactional batch is appended once the
// coordinator verifies it, refused with the verification's error when it
// does not, and refused when the producer's marker lands while the
// verification is under way (the guard), while a batch joining an open
// transaction is not verified.
func TestVerificationGuard(t *testing.T) {
	ok := func(context.Context, int64, int16) error { return nil }
	notIn := func(context.Context, int64, int16) error { return errNotIn }
	t.Run("verified", func(t *testing.T) {
		p := openLeader(t, []int32{1}, []int32{1})
		if err := appendTxn(p, transactionalBatch(t, 0, 0), false, ok); err != nil || dataBatches(t, p) != 1 {
			t.Fatalf("verified: %v, %d appends", err, dataBatches(t, p))
		}
		// The transaction is open now: the next batch joins it unasked.
		if err := appendTxn(p, transactionalBatch(t, 0, 1), false, notIn); err != nil || dataBatches(t, p) != 2 {
			t.Fatalf("joining an open transaction: %v, %d appends; want no verification", err, dataBatches(t, p))
		}
	})
	t.Run("not in the transaction", func(t *testing.T) {
		p := openLeader(t, []int32{1}, []int32{1})
		if err := appendTxn(p, transactionalBatch(t, 0, 0), false, notIn); !errors.Is(err, errNotIn) || dataBatches(t, p) != 0 {
			t.Fatalf("not in the transaction: %v, %d appends; want the verification's error and none", err, dataBatches(t, p))
		}
	})
	t.Run("marker during the verification", func(t *testing.T) {
		p := openLeader(t, []int32{1}, []int32{1})
		markerMeanwhile := func(context.Context, int64, int16) error { return marker(p, 0) }
		if err := appendTxn(p, transactionalBatch(t, 0, 0), false, markerMeanwhile); !errors.Is(err, kerr.InvalidTxnState) || dataBatches(t, p) != 0 {
			t.Fatalf("marker during the verification: %v, %d appends; want INVALID_TXN_STATE and none", err, dataBatches(t, p))
		}
	})
	t.Run("no transactional id", func(t *testing.T) {
		p := openLeader(t, []int32{1}, []int32{1})
		_, _, err := p.AppendTransactional(t.Context(), transactionalBatch(t, 0, 0), -1, nil, false, nil)
		if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || dataBatches(t, p) != 0 {
			t.Fatalf("no transactional id: %v, %d appends; want TRANSACTIONAL_ID_AUTHORIZATION_FAILED and none", err, dataBatches(t, p))
		}
	})
	t.Run("not transactional", func(t *testing.T) {
		p := openLeader(t, []int32{1}, []int32{1})
		_, wait, err := p.AppendTransactional(t.Context(), oneRecord(t), -1, nil, false, nil)
		if err == nil {
			err = wait(t.Context())
		}
		if err != nil || dataBatches(t, p) != 1 {
			t.Fatalf("plain batch: %v, %d appends; want it appended unverified", err, dataBatches(t, p))
		}
	})
}

// TestAddGuard (KIP-890 part 2): while a Produce v12's partition is
// added, the marker of the producer's previous transaction (at the
// batch's epoch, the bumped one) may land: the batch is still appended.
// A marker at a later epoch ended the transaction the partition was
// added to: the batch is refused with NOT_ENOUGH_REPLICAS, so that the
// producer retries and the coordinator decides again.
func TestAddGuard(t *testing.T) {
	run := func(markerEpoch int16) (*Partition, error) {
		p := openLeader(t, []int32{1}, []int32{1})
		add := func(context.Context, int64, int16) error { return marker(p, markerEpoch) }
		return p, appendTxn(p, transactionalBatch(t, 0, 0), true, add)
	}
	if p, err := run(0); err != nil || dataBatches(t, p) != 1 {
		t.Fatalf("previous transaction's marker during the add: %v, %d appends; want the batch appended", err, dataBatches(t, p))
	}
	if p, err := run(1); !errors.Is(err, kerr.NotEnoughReplicas) || dataBatches(t, p) != 0 {
		t.Fatalf("own transaction's marker during the add: %v, %d appends; want NOT_ENOUGH_REPLICAS and none", err, dataBatches(t, p))
	}
}

// TestConcurrentVerificationsShareTheGuard: two batches of one producer
// verified at once share one guard, so the first to be verified does not
// take the other's guard away: both are appended, whichever answer comes
// first.
func TestConcurrentVerificationsShareTheGuard(t *testing.T) {
	p := openLeader(t, []int32{1}, []int32{1})
	firstAsked, secondAsked := make(chan struct{}), make(chan struct{})
	release := make(chan struct{})
	first := func(context.Context, int64, int16) error {
		close(firstAsked)
		<-secondAsked // the second has registered (or shared) its guard
		return nil
	}
	second := func(context.Context, int64, int16) error {
		close(secondAsked)
		<-release
		return nil
	}
	errs := make(chan error, 2)
	go func() { errs <- appendTxn(p, transactionalBatch(t, 0, 0), false, first) }()
	<-firstAsked
	go func() { errs <- appendTxn(p, transactionalBatch(t, 0, 1), false, second) }()
	if err := <-errs; err != nil {
		t.Fatalf("first verified batch: %v, want it appended", err)
	}
	close(release)
	if err := <-errs; err != nil {
		t.Fatalf("second verified batch: %v, want it appended", err)
	}
	if n := dataBatches(t, p); n != 2 {
		t.Fatalf("%d batches appended, want 2", n)
	}
}
