package log

import (
	"bytes"
	"errors"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// A follower that copies the leader's batches ends with the leader's bytes,
// offsets and epochs, across segment rolls, and survives a reopen.
func TestAppendReplicatedCopiesLeader(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 400
	leader := openLog(t, vfs.Default, t.TempDir(), cfg, nil)
	defer leader.Close()
	for i := range 12 {
		mustAppend(t, leader, mkBatch(t, spec{records: 2, ts: int64(i), pid: 7, seq: int32(2 * i)}), int32(i/4))
	}
	dir := t.TempDir()
	follower := openLog(t, vfs.Default, dir, cfg, nil)
	for off := int64(0); off < leader.LogEndOffset(); {
		b, err := leader.Read(off, 300, leader.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		if off, err = follower.AppendReplicated(b); err != nil {
			t.Fatalf("AppendReplicated: %v", err)
		}
	}
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	follower = openLog(t, vfs.Default, dir, cfg, nil)
	defer follower.Close()
	want, got := readAll(t, leader), readAll(t, follower)
	if len(got) != len(want) {
		t.Fatalf("follower has %d batches, leader %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	for e := int32(0); e < 3; e++ {
		le, lo := leader.EndOffsetForEpoch(e)
		fe, fo := follower.EndOffsetForEpoch(e)
		if le != fe || lo != fo {
			t.Errorf("epoch %d: leader ends (%d, %d), follower (%d, %d)", e, le, lo, fe, fo)
		}
	}
	if follower.Segments() < 2 {
		t.Errorf("follower did not roll: %d segments", follower.Segments())
	}
}

// A batch below the log end, or whose CRC is wrong, is refused and leaves
// the log as it was; a batch past the log end is a gap that a compacted
// leader's log may have, and is taken.
func TestAppendReplicatedRefusesOverlapAndCorruption(t *testing.T) {
	l := openLog(t, vfs.Default, t.TempDir(), testConfig(), nil)
	defer l.Close()
	b := mkBatch(t, spec{records: 3})
	SetBase := func(raw []byte, off int64) []byte {
		c := bytes.Clone(raw)
		c[7] = byte(off) // base offset is big-endian at [0:8]
		return c
	}
	bad := bytes.Clone(b)
	bad[len(bad)-1] ^= 0xff
	if _, err := l.AppendReplicated(bad); err == nil {
		t.Fatal("corrupt batch accepted")
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end %d after refused appends", l.LogEndOffset())
	}
	if end, err := l.AppendReplicated(b); err != nil || end != 3 {
		t.Fatalf("good batch: end %d, err %v", end, err)
	}
	if _, err := l.AppendReplicated(SetBase(b, 1)); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("overlap: err %v, want ErrInvalidBatch", err)
	}
	if end, err := l.AppendReplicated(SetBase(b, 10)); err != nil || end != 13 {
		t.Fatalf("gap: end %d, err %v, want 13", end, err)
	}
	got, err := l.Read(5, 1<<20, 100, true)
	if h, herr := batch.Check(got); err != nil || herr != nil || h.BaseOffset != 10 {
		t.Fatalf("read in the gap: base %d, err %v %v, want the batch at 10", h.BaseOffset, err, herr)
	}
}
