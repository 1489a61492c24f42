package log

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/strata-streaming/strata/internal/vfs"
)

// TestSealedSegmentsAndRemoteGate: sealed segments are listed with their
// bytes and indexes; with Config.Remote, retention deletes only what is
// below the remote end, whatever local.retention.bytes says.
func TestSealedSegmentsAndRemoteGate(t *testing.T) {
	cfg := smallSegments()
	cfg.RetentionMs = -1
	cfg.Remote, cfg.LocalRetentionMs, cfg.LocalRetentionBytes = true, -1, 0
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	defer l.Close()
	batches := fill(t, l, 40, 0, 3)
	sealed := l.SealedSegments(0)
	if len(sealed) < 5 || sealed[0].Base != 0 || sealed[0].LeaderEpoch != 3 {
		t.Fatalf("sealed segments: %+v", sealed)
	}
	var all []byte
	for i, s := range sealed {
		if i > 0 && s.Base != sealed[i-1].Next {
			t.Fatalf("segments not contiguous: %+v", sealed)
		}
		v, err := l.OpenSealed(s.Base)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(io.NewSectionReader(v.Log, 0, v.Size))
		if err != nil || int64(len(b)) != s.Size {
			t.Fatalf("segment %d: read %d bytes, %v", s.Base, len(b), err)
		}
		if len(v.TimeIndex) == 0 || len(v.TimeIndex)%timeEntrySize != 0 || len(v.OffsetIndex)%offsetEntrySize != 0 {
			t.Errorf("segment %d: indexes of %d and %d bytes", s.Base, len(v.OffsetIndex), len(v.TimeIndex))
		}
		all = append(all, b...)
		v.Close()
	}
	// One record a batch: the sealed segments hold the first Next batches,
	// byte for byte once the assigned base offset is set.
	want := bytes.Join(batches[:sealed[len(sealed)-1].Next], nil)
	if !sameBodies(all, want) {
		t.Fatalf("sealed bytes (%d) differ from the appended batches (%d)", len(all), len(want))
	}
	if _, err := l.OpenSealed(l.LogEndOffset()); err == nil {
		t.Error("the active segment opened as sealed")
	}
	// Nothing uploaded: nothing may go, although local retention is 0.
	if n, err := l.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("retention before upload deleted %d (%v)", n, err)
	}
	l.SetRemoteEnd(sealed[2].Next)
	if n, err := l.ApplyRetention(); err != nil || n != 3 || l.LogStartOffset() != sealed[2].Next {
		t.Fatalf("retention after uploading 3 segments: deleted %d, start %d (%v)", n, l.LogStartOffset(), err)
	}
}

// sameBodies compares two runs of batches ignoring each batch's first 12
// bytes (base offset and length) and its leader epoch (bytes 12-15), which
// the log sets on append.
func sameBodies(a, b []byte) bool {
	for len(a) > 0 && len(b) > 0 {
		n := 12 + int(uint32(a[8])<<24|uint32(a[9])<<16|uint32(a[10])<<8|uint32(a[11]))
		if n > len(a) || n > len(b) || !bytes.Equal(a[16:n], b[16:n]) {
			return false
		}
		a, b = a[n:], b[n:]
	}
	return len(a) == 0 && len(b) == 0
}

// TestRestartAt: an empty log restarts at an offset and takes appends
// there; a log with data refuses.
func TestRestartAt(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", testConfig(), nil)
	if err := l.RestartAt(500, nil); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, l, mkBatch(t, spec{}), 0); res.BaseOffset != 500 {
		t.Fatalf("append after restart at 500: base %d", res.BaseOffset)
	}
	if err := l.RestartAt(900, nil); err == nil {
		t.Error("a log with data restarted")
	}
	l.Close()
	l = openLog(t, fs, "/p", testConfig(), nil)
	defer l.Close()
	if l.LogStartOffset() != 500 || l.LogEndOffset() != 501 {
		t.Errorf("after reopen: start %d end %d, want 500 and 501", l.LogStartOffset(), l.LogEndOffset())
	}
}

// TestRestartAtRestoresProducerState: a log restarted on a new disk with
// the producer snapshot of the segment it continues after recognises a
// producer's retry of a batch written before the disk was lost.
func TestRestartAtRestoresProducerState(t *testing.T) {
	cfg := smallSegments()
	old := openLog(t, vfs.NewMem(), "/old", cfg, nil)
	for seq := int32(0); seq < 30; seq++ {
		mustAppend(t, old, mkBatch(t, spec{pid: 7, seq: seq, valueSize: 100}), 0)
	}
	sealed := old.SealedSegments(0)
	end := sealed[len(sealed)-1]
	v, err := old.OpenSealed(end.Base)
	if err != nil || v.ProducerSnapshot == nil {
		t.Fatalf("no producer snapshot with the last sealed segment: %v", err)
	}
	snap := v.ProducerSnapshot
	v.Close()
	old.Close()

	fresh := openLog(t, vfs.NewMem(), "/new", cfg, nil)
	defer fresh.Close()
	if err := fresh.RestartAt(end.Next, snap); err != nil {
		t.Fatal(err)
	}
	// The producer goes on: its next sequence after the snapshot's point is
	// accepted, and a retry of a batch from before the snapshot is a
	// duplicate, not a new write.
	seqAtEnd := int32(end.Next - 1) // one record a batch, sequences from 0
	dup := mkBatch(t, spec{pid: 7, seq: seqAtEnd, valueSize: 100})
	res, err := fresh.Append(dup, 0)
	if err != nil || !res.Duplicate || res.BaseOffset != end.Next-1 {
		t.Fatalf("retry of the last batch before the restart: %+v, %v; want a duplicate at %d", res, err, end.Next-1)
	}
	if wrong := openLog(t, vfs.NewMem(), "/other", cfg, nil).RestartAt(end.Next+5, snap); wrong == nil {
		t.Error("a snapshot taken at another offset was accepted")
	}
}

// TestRoll: Roll seals the active segment so that the whole log is listed
// for upload; on an empty active segment it does nothing, and appends go
// on in a new segment.
func TestRoll(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", smallSegments(), nil)
	defer l.Close()
	fill(t, l, 3, 0, 1)
	before := l.Segments()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	sealed := l.SealedSegments(0)
	if l.Segments() != before+1 || len(sealed) == 0 || sealed[len(sealed)-1].Next != l.LogEndOffset() {
		t.Fatalf("after Roll: %d segments (were %d), sealed %+v, log end %d", l.Segments(), before, sealed, l.LogEndOffset())
	}
	if err := l.Roll(); err != nil || l.Segments() != before+1 {
		t.Fatalf("Roll of an empty active segment: %v, %d segments", err, l.Segments())
	}
	fill(t, l, 1, 3, 1)
	if l.LogEndOffset() != 4 {
		t.Fatalf("log end %d after an append past the roll", l.LogEndOffset())
	}
}

// TestSealedSegmentsCoverWhatTheCleanerEmptied: a tiered compacted log
// whose cleaner dropped a segment's last batch, and every batch of
// another, lists its sealed segments end to end, each up to the next
// one's base, the emptied one too, so the bucket's manifest gets no hole.
// Retention keeps a segment until the remote end passes those emptied
// offsets: deleting it when the remote end reached only its last batch
// would move the log start above the bucket's end, and reads there would
// find neither.
func TestSealedSegmentsCoverWhatTheCleanerEmptied(t *testing.T) {
	cfg := compactConfig()
	cfg.Remote, cfg.LocalRetentionMs, cfg.LocalRetentionBytes = true, -1, 0
	cfg.SegmentBytes = 300 // one segment per cleaned group
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	defer l.Close()
	roll := func() {
		t.Helper()
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	// mkBatch names a batch's records k0, k1, ...: a one-record batch
	// replaces k0 only.
	mustAppend(t, l, mkBatch(t, spec{records: 4}), 1) // 0-3: k1-k3 live
	mustAppend(t, l, mkBatch(t, spec{}), 1)           // 4: k0, replaced below
	roll()
	mustAppend(t, l, mkBatch(t, spec{valueSize: 200}), 1) // 5: k0, replaced below
	roll()
	mustAppend(t, l, mkBatch(t, spec{valueSize: 200}), 1) // 6: k0, the latest
	roll()
	if _, err := l.Clean(context.Background(), NewOffsetMap(1<<20), nil, noLimit); err != nil {
		t.Fatal(err)
	}
	if l.segs[0].next != 4 || l.segs[1].size != 0 {
		t.Fatalf("the cleaner left segments [%d, %d) and [%d, %d) of %d bytes; the test needs [0, 4) and an empty one",
			l.segs[0].base, l.segs[0].next, l.segs[1].base, l.segs[1].next, l.segs[1].size)
	}
	sealed := l.SealedSegments(0)
	want := [][2]int64{{0, 5}, {5, 6}, {6, 7}}
	if len(sealed) != len(want) {
		t.Fatalf("sealed segments %+v, want the ranges %v", sealed, want)
	}
	for i, s := range sealed {
		if s.Base != want[i][0] || s.Next != want[i][1] {
			t.Fatalf("sealed segments %+v, want the ranges %v", sealed, want)
		}
		v, err := l.OpenSealed(s.Base)
		if err != nil {
			t.Fatal(err)
		}
		if v.Next != s.Next || v.Size != s.Size {
			t.Errorf("OpenSealed(%d) = [%d, %d) %d bytes, listed as [%d, %d) %d bytes", s.Base, v.Base, v.Next, v.Size, s.Base, s.Next, s.Size)
		}
		v.Close()
	}
	l.SetRemoteEnd(4)
	if n, err := l.ApplyRetention(); err != nil || n != 0 {
		t.Fatalf("retention with the bucket ending at the first segment's last batch deleted %d segments (%v), start %d", n, err, l.LogStartOffset())
	}
	l.SetRemoteEnd(6)
	if n, err := l.ApplyRetention(); err != nil || n != 2 || l.LogStartOffset() != 6 {
		t.Fatalf("retention with the bucket ending at 6: deleted %d segments, start %d (%v); want 2 and 6", n, l.LogStartOffset(), err)
	}
}
