package group

import (
	"context"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// appendMarker writes a transaction marker for producerID to l, as the
// transaction coordinator's WriteTxnMarkers does.
func appendMarker(t *testing.T, l partitionLog, producerID int64, commit bool) {
	t.Helper()
	m := batch.Marker{Type: batch.ControlAbort}
	if commit {
		m.Type = batch.ControlCommit
	}
	raw, err := batch.BuildMarker(producerID, 0, m, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.l.Append(raw, 0); err != nil {
		t.Fatal(err)
	}
}

// TestTxnOffsetsWaitForTheirMarker: offsets committed in a transaction
// are pending (not fetched, reported unstable) until its commit marker;
// an aborted transaction's offsets are dropped; a coordinator loaded from
// the partition decides both the same way, and keeps pending what has no
// marker yet.
func TestTxnOffsetsWaitForTheirMarker(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, vfs.NewMem())
	c, err := Load(ctx, 0, l, DefaultConfig(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	a0 := TopicPartition{"a", 0}
	commit(t, c, "g", map[TopicPartition]int64{a0: 5})
	txnCommit := func(pid int64, offset int64) {
		t.Helper()
		r := TxnCommit{Group: "g", ProducerID: pid, Generation: -1, Offsets: map[TopicPartition]Offset{a0: {Offset: offset, LeaderEpoch: -1}}}
		if err := c.CommitTxnOffsets(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	fetched := func(c *Coordinator) int64 {
		t.Helper()
		got, _ := c.FetchOffsets("g", nil)
		return got[a0].Offset
	}
	txnCommit(7, 10)
	if fetched(c) != 5 || !c.PendingTxnOffsets("g")[a0] {
		t.Fatalf("pending offset: fetched %d, unstable %v; want 5 and unstable", fetched(c), c.PendingTxnOffsets("g"))
	}
	appendMarker(t, l, 7, true)
	c.CompleteTxnOffsets(7, true)
	if fetched(c) != 10 || len(c.PendingTxnOffsets("g")) != 0 {
		t.Fatalf("after commit: fetched %d, unstable %v", fetched(c), c.PendingTxnOffsets("g"))
	}
	txnCommit(8, 20)
	appendMarker(t, l, 8, false)
	c.CompleteTxnOffsets(8, false)
	txnCommit(9, 30) // no marker yet
	if fetched(c) != 10 {
		t.Fatalf("after abort: fetched %d, want 10", fetched(c))
	}
	c.Close()
	c, err = Load(ctx, 0, l, DefaultConfig(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if fetched(c) != 10 || !c.PendingTxnOffsets("g")[a0] {
		t.Fatalf("replayed: fetched %d, unstable %v; want 10 and producer 9's offset pending", fetched(c), c.PendingTxnOffsets("g"))
	}
	appendMarker(t, l, 9, true)
	c.CompleteTxnOffsets(9, true)
	if fetched(c) != 30 {
		t.Fatalf("replayed then committed: fetched %d, want 30", fetched(c))
	}
}
