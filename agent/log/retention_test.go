package log

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// fill appends n one-record batches with timestamps ts0, ts0+1, ... and
// returns them.
func fill(t *testing.T, l *Log, n int, ts0 int64, epoch int32) [][]byte {
	var bs [][]byte
	for i := 0; i < n; i++ {
		b := mkBatch(t, spec{ts: ts0 + int64(i), valueSize: 100})
		mustAppend(t, l, b, epoch)
		bs = append(bs, b)
	}
	return bs
}

func smallSegments() Config {
	c := testConfig()
	c.SegmentBytes = 1000 // about 5 batches of 180 bytes
	c.IndexIntervalBytes = 200
	return c
}

func TestRetentionBySize(t *testing.T) {
	cfg := smallSegments()
	cfg.RetentionMs = -1 // the batches' timestamps are from 1970
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	defer l.Close()
	fill(t, l, 40, 0, 0)
	segs := l.Segments()
	size := l.Size()
	cfg.RetentionBytes = size / 2
	l.SetConfig(cfg)
	n, err := l.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("ApplyRetention = %d, %v", n, err)
	}
	if l.Size() < cfg.RetentionBytes || l.Size() > cfg.RetentionBytes+cfg.SegmentBytes {
		t.Fatalf("size %d after retention to %d", l.Size(), cfg.RetentionBytes)
	}
	if l.Segments() != segs-n {
		t.Fatalf("segments %d, want %d", l.Segments(), segs-n)
	}
	lso := l.LogStartOffset()
	if _, err := l.Read(lso-1, 1, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if b, err := l.Read(lso, 1, 100, true); err != nil || len(b) == 0 {
		t.Fatalf("read at start: %v", err)
	}
	// retention.bytes=0 deletes everything, the active segment too (rolled).
	cfg.RetentionBytes = 0
	l.SetConfig(cfg)
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if l.Size() != 0 || l.LogStartOffset() != 40 || l.LogEndOffset() != 40 {
		t.Fatalf("after deleting all: size %d start %d end %d", l.Size(), l.LogStartOffset(), l.LogEndOffset())
	}
	if res := mustAppend(t, l, mkBatch(t, spec{}), 0); res.BaseOffset != 40 {
		t.Fatalf("append after deleting all: %+v", res)
	}
}

func TestRetentionByTime(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	cfg := smallSegments()
	cfg.RetentionMs = 100 * 1e6 // 100 ms
	l := openLog(t, vfs.NewMem(), "/p", cfg, clock)
	defer l.Close()
	fill(t, l, 20, 1_000_000, 0) // ts 1_000_000..1_000_019, in ~4 segments
	fill(t, l, 20, 2_000_000, 0)
	clock.ms = 2_000_050
	n, err := l.ApplyRetention()
	if err != nil || n == 0 {
		t.Fatalf("ApplyRetention = %d, %v", n, err)
	}
	// Every batch with an old timestamp is gone unless it shares a segment
	// with a new one.
	got := readAll(t, l)
	h, _ := batch.ParseHeader(got[0])
	if l.LogStartOffset() > 20 || h.MaxTimestamp < 1_000_015 {
		t.Fatalf("start %d, first remaining ts %d", l.LogStartOffset(), h.MaxTimestamp)
	}
	clock.ms = 3_000_000
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 40 || l.Size() != 0 {
		t.Fatalf("all expired: start %d size %d", l.LogStartOffset(), l.Size())
	}
	// Negative retention keeps forever.
	cfg.RetentionMs = -1
	l.SetConfig(cfg)
	fill(t, l, 10, 0, 0)
	clock.ms = 1 << 50
	if n, _ := l.ApplyRetention(); n != 0 {
		t.Fatalf("retention.ms=-1 deleted %d", n)
	}
}

func TestDeleteRecordsBeforePersists(t *testing.T) {
	mem := vfs.NewMem()
	cfg := smallSegments()
	l := openLog(t, mem, "/p", cfg, nil)
	bs := fill(t, l, 30, 0, 2)
	segs := l.Segments()
	if err := l.DeleteRecordsBefore(31); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond end: %v", err)
	}
	if err := l.DeleteRecordsBefore(17); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 17 || l.Segments() >= segs {
		t.Fatalf("start %d segments %d (were %d)", l.LogStartOffset(), l.Segments(), segs)
	}
	if err := l.DeleteRecordsBefore(5); err != nil || l.LogStartOffset() != 17 {
		t.Fatalf("lowering the start: %v, start %d", err, l.LogStartOffset())
	}
	check := func(l *Log) {
		t.Helper()
		if l.LogStartOffset() != 17 {
			t.Fatalf("start %d after restart", l.LogStartOffset())
		}
		if _, err := l.Read(16, 1, 30, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Fatalf("read below start: %v", err)
		}
		got := readAll(t, l)
		if len(got) != 13 || !bytes.Equal(got[0], bs[17]) {
			t.Fatalf("%d batches after start", len(got))
		}
		if e, o := l.EndOffsetForEpoch(2); e != 2 || o != 30 {
			t.Fatalf("epoch 2 end: %d %d", e, o)
		}
	}
	check(l)
	l.Close()
	l = openLog(t, mem, "/p", cfg, nil)
	check(l)
	abandon(l)
	l = openLog(t, mem.CrashClone(), "/p", cfg, nil)
	check(l)
	l.Close()
}

func TestTruncateTo(t *testing.T) {
	mem := vfs.NewMem()
	cfg := smallSegments()
	l := openLog(t, mem, "/p", cfg, nil)
	var bs [][]byte
	epochOf := []int32{1, 1, 1, 3, 3, 3, 3, 5, 5, 5}
	for i := 0; i < 30; i++ { // batches of 2 records: offsets 2i, 2i+1
		b := mkBatch(t, spec{records: 2, ts: int64(i), valueSize: 100, pid: 9, seq: int32(2 * i)})
		mustAppend(t, l, b, epochOf[i/3])
		bs = append(bs, b)
	}
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 42 {
		t.Fatalf("epoch 3 end %d %d", e, o)
	}
	if e, o := l.EndOffsetForEpoch(4); e != 3 || o != 42 {
		t.Fatalf("epoch 4 end %d %d", e, o)
	}
	if err := l.TruncateTo(100); err != nil || l.LogEndOffset() != 60 {
		t.Fatalf("truncate past end: %v, end %d", err, l.LogEndOffset())
	}
	// Offset 43 is inside the batch at 42: the cut is at 42.
	if err := l.TruncateTo(43); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log) {
		t.Helper()
		if l.LogEndOffset() != 42 {
			t.Fatalf("end %d", l.LogEndOffset())
		}
		if l.LatestEpoch() != 3 {
			t.Fatalf("latest epoch %d", l.LatestEpoch())
		}
		if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 42 {
			t.Fatalf("epoch 3 end %d %d", e, o)
		}
		got := readAll(t, l)
		if len(got) != 21 || !bytes.Equal(got[20], bs[20]) {
			t.Fatalf("%d batches", len(got))
		}
		// Producer state is as of offset 42: seq 42 follows, 40 is a dup,
		// 60 (written before the cut) is not cached any more.
		if res, err := l.Append(mkBatch(t, spec{records: 2, pid: 9, seq: 40}), 3); err != nil || !res.Duplicate || res.BaseOffset != 40 {
			t.Fatalf("dup after truncate: %+v %v", res, err)
		}
		if _, err := l.Append(mkBatch(t, spec{records: 2, pid: 9, seq: 44}), 3); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("gap after truncate: %v", err)
		}
	}
	check(l)
	l.Close()
	l = openLog(t, mem, "/p", cfg, nil)
	check(l)
	res := mustAppend(t, l, mkBatch(t, spec{records: 2, pid: 9, seq: 42}), 6)
	if res.BaseOffset != 42 || l.LatestEpoch() != 6 {
		t.Fatalf("append after truncate: %+v epoch %d", res, l.LatestEpoch())
	}
	// Truncating below the first segment restarts the log there.
	if err := l.DeleteRecordsBefore(20); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 3 || l.Size() != 0 || l.LatestEpoch() != -1 {
		t.Fatalf("after full truncate: start %d end %d size %d epoch %d", l.LogStartOffset(), l.LogEndOffset(), l.Size(), l.LatestEpoch())
	}
	l.Close()
}

// TestTimeRetentionPassesEmptiedSegments: on a compact,delete log, a
// segment the cleaner emptied has no timestamp and a fresh file time (the
// cleaning's); time retention must go on past it to the old segments
// after it, not stop there.
func TestTimeRetentionPassesEmptiedSegments(t *testing.T) {
	cfg := compactConfig()
	cfg.Delete, cfg.RetentionMs = true, time.Minute
	cfg.SegmentBytes = 300 // one segment per cleaned group
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	defer l.Close()
	// All from 1970. mkBatch names a batch's records k0, k1, ...: the
	// last one replaces both before it, which the cleaner empties.
	for _, sp := range []spec{{records: 4}, {valueSize: 200}, {records: 4}} { // 0-3, 4, 5-8
		mustAppend(t, l, mkBatch(t, sp), 1)
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Clean(context.Background(), NewOffsetMap(1<<20), nil, noLimit); err != nil {
		t.Fatal(err)
	}
	if l.segs[0].size != 0 || l.segs[1].size != 0 {
		t.Fatalf("the cleaner left %d and %d bytes in the first two segments; the test needs them empty", l.segs[0].size, l.segs[1].size)
	}
	n, err := l.ApplyRetention()
	if err != nil || n != 3 || l.LogStartOffset() != 9 {
		t.Fatalf("time retention deleted %d segments, start %d (%v); want 3 and 9", n, l.LogStartOffset(), err)
	}
}
