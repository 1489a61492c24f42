package log

import (
	"bytes"
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
