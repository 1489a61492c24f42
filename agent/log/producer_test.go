package log

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
)

type goldenStep struct {
	h batch.Header
	m batch.Marker
}

// goldenScript is the history behind testdata/producer-snapshots: sequence
// windows, a wrapping sequence, an epoch bump, a producer without
// sequences and, withTxn, an open, a committed and an aborted transaction.
func goldenScript(withTxn bool) []goldenStep {
	none := batch.Marker{Type: -1}
	var s []goldenStep
	off := int64(0)
	add := func(h batch.Header, m batch.Marker) {
		h.BaseOffset = off
		off = h.LastOffset() + 1
		s = append(s, goldenStep{h, m})
	}
	for i := int32(0); i < 7; i++ {
		add(batch.Header{ProducerID: 7, BaseSequence: 2 * i, LastOffsetDelta: 1, MaxTimestamp: 1000 + int64(i)}, none)
	}
	add(batch.Header{ProducerID: 3, ProducerEpoch: 2, BaseSequence: math.MaxInt32 - 1, LastOffsetDelta: 2, MaxTimestamp: 2000}, none)
	add(batch.Header{ProducerID: 3, ProducerEpoch: 2, BaseSequence: 1, MaxTimestamp: 1999}, none)
	add(batch.Header{ProducerID: 1, BaseSequence: -1, MaxTimestamp: 1234}, none)
	add(batch.Header{ProducerID: 8, BaseSequence: 0, MaxTimestamp: 3000}, none)
	add(batch.Header{ProducerID: 8, ProducerEpoch: 1, BaseSequence: 0, MaxTimestamp: 3001}, none)
	if withTxn {
		txn := int16(batch.AttrTransactional)
		ctl := int16(batch.AttrTransactional | batch.AttrControl)
		add(batch.Header{ProducerID: 9, ProducerEpoch: 1, BaseSequence: 0, Attributes: txn, MaxTimestamp: 4000}, none)
		add(batch.Header{ProducerID: 11, BaseSequence: 0, Attributes: txn, LastOffsetDelta: 3, MaxTimestamp: 4001}, none)
		add(batch.Header{ProducerID: 11, BaseSequence: -1, Attributes: ctl, MaxTimestamp: 4002}, batch.Marker{Type: batch.ControlCommit, CoordinatorEpoch: 4})
		add(batch.Header{ProducerID: 12, ProducerEpoch: 3, BaseSequence: 0, Attributes: txn, MaxTimestamp: 4003}, none)
		add(batch.Header{ProducerID: 12, ProducerEpoch: 3, BaseSequence: -1, Attributes: ctl, MaxTimestamp: 4004}, batch.Marker{Type: batch.ControlAbort, CoordinatorEpoch: 5})
	}
	return s
}

// Snapshot files written by earlier code load, and the current code
// writes them byte for byte. testdata/producer-snapshots holds, from
// goldenScript: v1.snap (goldenScript(false) at offset 21, written by the
// first layout's code at c9a36fb), v2.snap (goldenScript(true) at offset
// 26) and v2-notxn.snap (goldenScript(false) at 21), both written by the
// code at 0703a71, before the rules moved to package producers. They are
// what disks hold: never regenerate them.
func TestProducerSnapshotGolden(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("testdata/producer-snapshots/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	replay := func(withTxn bool) *producers.State {
		ps := producers.New()
		for _, st := range goldenScript(withTxn) {
			if dup, err := ps.Check(&st.h, st.m); dup != nil || err != nil {
				t.Fatalf("check %+v: %+v %v", st.h, dup, err)
			}
			ps.Update(&st.h, st.m)
		}
		return ps
	}
	v1, v2, v2NoTxn := read("v1.snap"), read("v2.snap"), read("v2-notxn.snap")
	for _, c := range []struct {
		name      string
		file      []byte
		offset    int64
		reencoded []byte // what encodeSnapshot writes for its state
		replayed  *producers.State
	}{
		{"v1", v1, 21, v2NoTxn, replay(false)},
		{"v2", v2, 26, v2, replay(true)},
		{"v2 without transactions", v2NoTxn, 21, v2NoTxn, replay(false)},
	} {
		off, ps, err := decodeSnapshot(c.file)
		if err != nil || off != c.offset {
			t.Fatalf("%s: decode: offset %d, %v", c.name, off, err)
		}
		if got := encodeSnapshot(ps, off); !bytes.Equal(got, c.reencoded) {
			t.Errorf("%s: re-encoded\n%x\nwant\n%x", c.name, got, c.reencoded)
		}
		if got := encodeSnapshot(c.replayed, off); !bytes.Equal(got, c.reencoded) {
			t.Errorf("%s: the replayed history encodes as\n%x\nwant\n%x", c.name, got, c.reencoded)
		}
	}
	// What the v2 file says, spelled out.
	_, ps, _ := decodeSnapshot(v2)
	if ps.FirstUnstable() != 21 || !ps.TxnOpen(9, 1) || ps.Len() != 7 {
		t.Errorf("v2: first unstable %d, producer 9 open %v, %d producers", ps.FirstUnstable(), ps.TxnOpen(9, 1), ps.Len())
	}
	if p, _ := ps.Producer(3); len(p.Batches) != 2 || p.Batches[0].LastSeq != 0 || p.Epoch != 2 {
		t.Errorf("v2: producer 3 (a wrapped sequence) %+v", p)
	}
	if p, _ := ps.Producer(12); p.CoordinatorEpoch != 5 || p.TxnFirst != -1 || p.Epoch != 3 {
		t.Errorf("v2: producer 12 (aborted) %+v", p)
	}
}
