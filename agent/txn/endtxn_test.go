package txn

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestEndTxnV2BumpsTheEpoch (KIP-890 part 2): each end of a transaction
// of transaction version 2 bumps the producer epoch, the markers carry
// the bumped epoch, and the answer is the epoch to use next; a retry at
// the epoch before the bump succeeds once complete, other old epochs are
// fenced; an abort with nothing open bumps the epoch without markers; a
// coordinator that replays the partition keeps the transaction's version.
func TestEndTxnV2BumpsTheEpoch(t *testing.T) {
	f := newFixture(t)
	pid, e0, _ := f.init("t1", -1, -1)
	if err := f.c.AddPartitions(ctx, "t1", pid, e0, partsAB, true); err != nil {
		t.Fatal(err)
	}
	gotID, gotEpoch, err := f.c.EndTxn(ctx, "t1", pid, e0, true, true)
	if err != nil || gotID != pid || gotEpoch != e0+1 {
		t.Fatalf("EndTxn v5: %d/%d %v, want %d/%d", gotID, gotEpoch, err, pid, e0+1)
	}
	m := f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	if m.ProducerEpoch != e0+1 || !m.TV2 {
		t.Fatalf("after the commit %+v, want epoch %d and TV2", m, e0+1)
	}
	if got, want := f.markers.written(), []markerCall{{pid, e0 + 1, true, partsAB}}; !slices.EqualFunc(got, want, equalCall) {
		t.Fatalf("markers %+v, want %+v (at the bumped epoch)", got, want)
	}
	// The answer was lost: the retry names the old epoch.
	if id, epoch, err := f.c.EndTxn(ctx, "t1", pid, e0, true, true); err != nil || id != pid || epoch != e0+1 {
		t.Fatalf("retried commit: %d/%d %v, want %d/%d", id, epoch, err, pid, e0+1)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, e0, false, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("abort at the old epoch of a committed transaction: %v, want ErrInvalidTxnState", err)
	}
	// The producer at the old epoch is a zombie for everything else.
	if err := f.c.AddPartitions(ctx, "t1", pid, e0, partsAB, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("add at the old epoch: %v, want ErrProducerFenced", err)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, e0-1, true, true); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("commit two epochs back: %v, want ErrProducerFenced", err)
	}
	// A commit with nothing open is refused; an abort is served.
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, e0+1, true, true); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("commit with nothing open: %v, want ErrInvalidTxnState", err)
	}
	if id, epoch, err := f.c.EndTxn(ctx, "t1", pid, e0+1, false, true); err != nil || id != pid || epoch != e0+2 {
		t.Fatalf("abort with nothing open: %d/%d %v, want %d/%d", id, epoch, err, pid, e0+2)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteAbort)
	if got := f.markers.written(); len(got) != 2 || len(got[1].parts) != 0 {
		t.Fatalf("markers %+v, want none for the empty abort", got)
	}
	// A failover coordinator replays the version: the retry of the abort
	// is still recognised.
	f.c.Close()
	f.c = f.load(nil)
	if m := f.waitState("t1", kmsg.TransactionStateCompleteAbort); !m.TV2 || m.ProducerEpoch != e0+2 {
		t.Fatalf("replayed %+v", m)
	}
	if _, epoch, err := f.c.EndTxn(ctx, "t1", pid, e0+1, false, true); err != nil || epoch != e0+2 {
		t.Fatalf("retried abort after a failover: %d %v", epoch, err)
	}
}

// TestEndTxnV2ExhaustedEpoch: at the last epoch, EndTxn v5 takes a new
// producer id; the markers go out under the old id at its final epoch,
// the producer continues under the new id at epoch 0, and a retry
// naming the old id succeeds.
func TestEndTxnV2ExhaustedEpoch(t *testing.T) {
	f := newFixture(t)
	pid, _, _ := f.init("t1", -1, -1)
	last := int16(math.MaxInt16 - 1)
	f.c.mu.Lock()
	f.c.txns["t1"].ProducerEpoch = last
	f.c.mu.Unlock()
	if err := f.c.AddPartitions(ctx, "t1", pid, last, partsAB, true); err != nil {
		t.Fatal(err)
	}
	next, epoch, err := f.c.EndTxn(ctx, "t1", pid, last, true, true)
	if err != nil || next == pid || epoch != 0 {
		t.Fatalf("EndTxn at the last epoch: %d/%d %v, want a new id at epoch 0", next, epoch, err)
	}
	m := f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	if m.ProducerID != next || m.ProducerEpoch != 0 || m.PrevProducerID != pid {
		t.Fatalf("after the commit %+v", m)
	}
	if got, want := f.markers.written(), []markerCall{{pid, math.MaxInt16, true, partsAB}}; !slices.EqualFunc(got, want, equalCall) {
		t.Fatalf("markers %+v, want %+v", got, want)
	}
	if id, epoch, err := f.c.EndTxn(ctx, "t1", pid, last, true, true); err != nil || id != next || epoch != 0 {
		t.Fatalf("retry under the old id: %d/%d %v", id, epoch, err)
	}
	if err := f.c.AddPartitions(ctx, "t1", next, 0, partsAB, true); err != nil {
		t.Fatalf("next transaction under the new id: %v", err)
	}
}

// TestEndTxnV2AbortAfterV1Abort: after an upgrade, a client's first
// version-2 abort, with its last transaction aborted at version 1, is an
// abort with nothing open that bumps the epoch, not a retry of the old one.
func TestEndTxnV2AbortAfterV1Abort(t *testing.T) {
	f := newFixture(t)
	pid, e0, _ := f.init("t1", -1, -1)
	if err := f.c.AddPartitions(ctx, "t1", pid, e0, partsAB, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, e0, false, false); err != nil {
		t.Fatal(err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteAbort)
	if id, epoch, err := f.c.EndTxn(ctx, "t1", pid, e0, false, true); err != nil || id != pid || epoch != e0+1 {
		t.Fatalf("version-2 abort after a version-1 abort: %d/%d %v, want %d/%d", id, epoch, err, pid, e0+1)
	}
}

// TestInitProducerIDAfterALostEndTxnAnswer (issue 29): a producer whose
// version-2 EndTxn succeeded but whose answer was lost still holds the
// epoch before the bump; franz-go then reloads its producer id with
// InitProducerID naming that epoch. As in Kafka (lastProducerEpoch) that
// is a retry: it gets the current epoch, not PRODUCER_FENCED, and a
// second retry gets the same. An epoch older than that is fenced, and
// the retry rule does not outlive the coordinator (Kafka keeps the last
// epoch in memory too).
func TestInitProducerIDAfterALostEndTxnAnswer(t *testing.T) {
	f := newFixture(t)
	f.init("t1", -1, -1)
	pid, e0, _ := f.init("t1", -1, -1) // epoch 1, so that one older exists
	if err := f.c.AddPartitions(ctx, "t1", pid, e0, partsAB, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, e0, true, true); err != nil {
		t.Fatal(err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	for i := range 2 {
		id, epoch, err := f.c.InitProducerID(ctx, "t1", time.Minute, pid, e0)
		if err != nil || id != pid || epoch != e0+1 {
			t.Fatalf("InitProducerID %d at the epoch before the bump: %d/%d %v, want %d/%d", i, id, epoch, err, pid, e0+1)
		}
	}
	// It goes on at that epoch.
	if err := f.c.AddPartitions(ctx, "t1", pid, e0+1, partsAB, true); err != nil {
		t.Fatalf("add after the reload: %v", err)
	}
	if _, _, err := f.c.InitProducerID(ctx, "t1", time.Minute, pid, e0-1); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("InitProducerID two epochs back: %v, want ErrProducerFenced", err)
	}
	// InitProducerID naming the current epoch bumps it, and its own
	// retry is served the same way.
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, e0+1, false, true); err != nil {
		t.Fatal(err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteAbort)
	if _, epoch, err := f.c.InitProducerID(ctx, "t1", time.Minute, pid, e0+2); err != nil || epoch != e0+3 {
		t.Fatalf("InitProducerID at the current epoch: %d %v, want %d", epoch, err, e0+3)
	}
	if _, epoch, err := f.c.InitProducerID(ctx, "t1", time.Minute, pid, e0+2); err != nil || epoch != e0+3 {
		t.Fatalf("its retry: %d %v, want %d", epoch, err, e0+3)
	}
	// A coordinator's fence ends the retry rule: after a timeout abort of
	// the next transaction, the epoch before the producer's last bump is
	// a zombie's.
	if err := f.c.AddPartitions(ctx, "t1", pid, e0+3, partsAB, true); err != nil {
		t.Fatal(err)
	}
	f.advance(2 * time.Minute)
	if n, err := f.c.AbortTimedOut(ctx); n != 1 || err != nil {
		t.Fatalf("timeout abort: %d %v", n, err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteAbort)
	if _, _, err := f.c.InitProducerID(ctx, "t1", time.Minute, pid, e0+2); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("InitProducerID at the epoch before the last bump, after a timeout abort: %v, want ErrProducerFenced", err)
	}
	f.c.Close()
	f.c = f.load(nil)
	if _, _, err := f.c.InitProducerID(ctx, "t1", time.Minute, pid, e0+2); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("the retry after a failover: %v, want ErrProducerFenced (as in Kafka)", err)
	}
}
