package txn

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestVerifyAnswersWithoutAdding: Verify says which partitions are in the
// ongoing transaction, adds none, says none once the transaction ended,
// and refuses a fenced epoch.
func TestVerifyAnswersWithoutAdding(t *testing.T) {
	f := newFixture(t)
	pid, epoch, _ := f.init("t1", -1, -1)
	if in, err := f.c.Verify(ctx, "t1", pid, epoch, partsAB); err != nil || slices.Contains(in, true) {
		t.Fatalf("before any AddPartitions: %v, %v; want none in", in, err)
	}
	if err := f.c.AddPartitions(ctx, "t1", pid, epoch, partsAB[:1], false); err != nil {
		t.Fatal(err)
	}
	if in, err := f.c.Verify(ctx, "t1", pid, epoch, partsAB); err != nil || !slices.Equal(in, []bool{true, false}) {
		t.Fatalf("with %v added: %v, %v; want [true false]", partsAB[:1], in, err)
	}
	if m := f.waitState("t1", kmsg.TransactionStateOngoing); !slices.Equal(m.Partitions, partsAB[:1]) {
		t.Fatalf("Verify added partitions: the transaction holds %v", m.Partitions)
	}
	if _, err := f.c.Verify(ctx, "t1", pid, epoch-1, partsAB); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("an older epoch: %v, want ErrProducerFenced", err)
	}
	if _, _, err := f.c.EndTxn(ctx, "t1", pid, epoch, true, false); err != nil {
		t.Fatal(err)
	}
	f.waitState("t1", kmsg.TransactionStateCompleteCommit)
	if in, err := f.c.Verify(ctx, "t1", pid, epoch, partsAB); err != nil || slices.Contains(in, true) {
		t.Fatalf("after the commit: %v, %v; want none in", in, err)
	}
}
