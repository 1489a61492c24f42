package log

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// keyedWorkload appends updates to keys k0..k(keys-1) in batches of
// perBatch records, a tombstone in about one update of tombstoneEvery
// (0: none), and returns each key's latest value (nil: deleted). Batches
// alternate codecs so that rebuilt batches are recompressed; pid > 0
// makes them idempotent with consecutive sequences.
func keyedWorkload(t testing.TB, l *Log, rng *rand.Rand, keys, updates, perBatch, tombstoneEvery int, tsMs int64, pid int64) map[string][]byte {
	t.Helper()
	latest := map[string][]byte{}
	seq := int32(0)
	codecs := []batch.Codec{batch.CodecNone, batch.CodecLZ4, batch.CodecZstd}
	for n, b := 0, 0; n < updates; b++ {
		var recs []batch.Record
		for i := 0; i < perBatch && n < updates; i, n = i+1, n+1 {
			k := fmt.Sprintf("k%d", rng.IntN(keys))
			var v []byte
			if tombstoneEvery == 0 || rng.IntN(tombstoneEvery) != 0 {
				v = []byte(fmt.Sprintf("%s=%d", k, n))
			}
			latest[k] = v
			recs = append(recs, batch.Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte(k), Value: v})
		}
		opts := batch.DefaultBuildOptions()
		opts.Codec, opts.BaseTimestamp = codecs[b%len(codecs)], tsMs
		if pid > 0 {
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, 0, seq
			seq += int32(len(recs))
		}
		raw, err := batch.Build(opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, raw, 0)
	}
	return latest
}

// checkCompacted reads the whole log and checks that offsets strictly
// increase, that every live key's latest value is there, and (strict) that
// nothing else is: no older value, no deleted key. It returns the number of
// records read.
func checkCompacted(t testing.TB, l *Log, latest map[string][]byte, strict bool) int {
	t.Helper()
	got := map[string][]byte{}
	last, n := int64(-1), 0
	for _, raw := range readAll(t, l) {
		h, recs, err := batch.Records(raw, 0)
		if err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		for _, r := range recs {
			off := h.BaseOffset + int64(r.OffsetDelta)
			if off <= last {
				t.Fatalf("offset %d after %d: offsets must strictly increase", off, last)
			}
			last = off
			if strict {
				if _, dup := got[string(r.Key)]; dup {
					t.Fatalf("key %s appears twice after cleaning (offset %d)", r.Key, off)
				}
			}
			got[string(r.Key)] = r.Value
			n++
		}
	}
	for k, v := range latest {
		g, ok := got[k]
		switch {
		case v != nil && (!ok || string(g) != string(v)):
			t.Fatalf("key %s: read %q (present %v), want latest %q", k, g, ok, v)
		case v == nil && ok && g != nil:
			t.Fatalf("deleted key %s reads %q", k, g)
		case v == nil && ok && strict:
			t.Fatalf("tombstone of %s outlived delete.retention.ms", k)
		}
	}
	return n
}

func compactConfig() Config {
	c := testConfig()
	c.Compact, c.Delete = true, false
	c.SegmentBytes = 8 << 10
	c.IndexIntervalBytes = 512
	c.MinCleanableDirtyRatio = 0
	c.DeleteRetention = time.Hour
	return c
}

// After a pass the log holds exactly each live key's latest value once
// tombstones pass delete.retention.ms; offsets keep their values, and the
// same holds after a reopen (indexes and recovery accept the gaps).
func TestCleanKeepsLatestValueOfEachKey(t *testing.T) {
	rng := seeded(t)
	clock := &fakeClock{ms: 1_000_000}
	dir := t.TempDir()
	l := openLog(t, vfs.Default, dir, compactConfig(), clock)
	defer func() { l.Close() }()
	latest := keyedWorkload(t, l, rng, 200, 6000, 20, 50, clock.ms, 0)
	before := l.Size()
	m := NewOffsetMap(1 << 20)

	// Tombstones are young: they stay, older values go.
	res, err := l.Clean(context.Background(), m, nil, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	if res.End != l.active().base || res.BytesWritten*4 > before {
		t.Fatalf("pass %+v: want the whole sealed log cleaned (active base %d, %d bytes)", res, l.active().base, before)
	}
	checkCompacted(t, l, latest, false)

	// New writes roll the log; once delete.retention.ms has passed, the
	// next pass drops the tombstones too.
	clock.ms += time.Hour.Milliseconds() + 1
	for k, v := range keyedWorkload(t, l, rng, 200, 3000, 20, 0, clock.ms, 0) {
		latest[k] = v
	}
	clock.ms += time.Hour.Milliseconds() + 1
	if _, err := l.Clean(context.Background(), m, nil, noLimit); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background(), m, nil, noLimit); err != nil {
		t.Fatal(err)
	}
	n := checkCompacted(t, l, latest, true)
	after := l.Size()
	t.Logf("bytes before %d, after %d; %d records for %d keys", before, after, n, len(latest))
	if after > before/4 {
		t.Errorf("cleaned log is %d bytes, from %d: not O(live keys)", after, before)
	}
	// Groups are formed by the segments' sizes before cleaning (as
	// Kafka's), so the second pass merges what the first one shrank.
	if segs := l.Segments(); segs > 4 {
		t.Errorf("%d segments after two passes, want the small cleaned ones merged", segs)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, vfs.Default, dir, compactConfig(), clock)
	checkCompacted(t, l, latest, true)
	if st := l.CleanState(noLimit); st.DirtyBytes != 0 || st.FirstDirty != l.active().base {
		t.Fatalf("after reopen: %+v, want the checkpoint at the active segment %d", st, l.active().base)
	}
}

// An offset map too small for the dirty section cleans up to where it
// filled; later passes go on from there and reach the same result.
func TestCleanWithSmallOffsetMapProgresses(t *testing.T) {
	rng := seeded(t)
	clock := &fakeClock{ms: 1_000_000}
	l := openLog(t, vfs.Default, t.TempDir(), compactConfig(), clock)
	defer l.Close()
	latest := keyedWorkload(t, l, rng, 8000, 20000, 50, 0, clock.ms, 0)
	m := NewOffsetMap(MinOffsetMapBytes) // ~2,400 keys
	passes := 0
	for ; l.CleanState(noLimit).DirtyBytes > 0; passes++ {
		if passes > 50 {
			t.Fatal("cleaner makes no progress")
		}
		if _, err := l.Clean(context.Background(), m, nil, noLimit); err != nil {
			t.Fatal(err)
		}
	}
	if passes < 2 {
		t.Fatalf("%d passes: the map should have filled", passes)
	}
	// Records behind a later pass's map may keep an older duplicate until
	// the next full pass; the latest value is always there.
	checkCompacted(t, l, latest, false)
}

// The last batch of an idempotent producer survives even when every
// record in it is replaced, so that the producer's sequence is known after
// a restart and its next batch is accepted.
func TestCleanKeepsProducersLastBatch(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	dir := t.TempDir()
	l := openLog(t, vfs.Default, dir, compactConfig(), clock)
	rec := func(k, v string) []batch.Record {
		return []batch.Record{{Key: []byte(k), Value: []byte(v)}}
	}
	build := func(pid int64, seq int32, recs []batch.Record) []byte {
		opts := batch.DefaultBuildOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.BaseTimestamp = pid, 0, seq, clock.ms
		raw, err := batch.Build(opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	mustAppend(t, l, build(7, 0, rec("a", "1")), 0)
	mustAppend(t, l, build(7, 1, rec("b", "1")), 0) // producer 7's last batch
	mustAppend(t, l, build(8, 0, rec("b", "2")), 0) // replaces it
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit); err != nil {
		t.Fatal(err)
	}
	var empty *batch.Header
	for _, raw := range readAll(t, l) {
		h, err := batch.ParseHeader(raw)
		if err != nil {
			t.Fatal(err)
		}
		if h.ProducerID == 7 && h.BaseSequence == 1 {
			empty = &h
		}
	}
	if empty == nil || empty.RecordCount != 0 || empty.BaseOffset != 1 {
		t.Fatalf("producer 7's last batch: %+v, want it kept empty at offset 1", empty)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart without snapshots replays the log: the emptied batch
	// carries the sequence.
	removeSnapshots(t, dir)
	l = openLog(t, vfs.Default, dir, compactConfig(), clock)
	defer l.Close()
	if _, err := l.Append(build(7, 2, rec("c", "1")), 0); err != nil {
		t.Fatalf("producer 7's next batch after cleaning and restart: %v", err)
	}
	if _, err := l.Append(build(7, 5, rec("c", "1")), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a sequence gap: %v, want ErrOutOfOrderSequence", err)
	}
}

// A crash at any point of a pass (every write, sync and rename in turn
// fails, then the unsynced bytes are dropped) leaves a log that opens with
// either the old or the new segments: offsets strictly increase and every
// key's latest value is there.
func TestCleanCrashAtEveryStep(t *testing.T) {
	rng := seeded(t)
	clock := &fakeClock{ms: 1_000_000}
	base := vfs.NewMem()
	l := openLog(t, base, "/p", compactConfig(), clock)
	latest := keyedWorkload(t, l, rng, 100, 3000, 20, 20, clock.ms, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	crashes := 0
	for _, op := range []vfs.Op{vfs.OpWrite, vfs.OpSync, vfs.OpRename, vfs.OpCreate} {
		for n := 0; ; n++ {
			if n > 500 {
				t.Fatalf("%v: the pass never finished", op)
			}
			mem := base.CrashClone()
			faulty := vfs.NewFaulty(mem)
			l := openLog(t, faulty, "/p", compactConfig(), clock)
			faulty.FailAfter(op, n, errors.New("injected"))
			_, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit)
			abandon(l)
			faulty.Clear()
			after := openLog(t, mem.CrashClone(), "/p", compactConfig(), clock)
			checkCompacted(t, after, latest, false)
			after.Close()
			if err == nil {
				break
			}
			crashes++
		}
	}
	t.Logf("%d crashed passes recovered", crashes)
	if crashes < 10 {
		t.Fatalf("only %d injected failures hit the pass", crashes)
	}
}

func removeSnapshots(t testing.TB, dir string) {
	t.Helper()
	names, err := vfs.Default.ReadDir(dir + "/" + producerDirName)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := vfs.Default.Remove(dir + "/" + producerDirName + "/" + n); err != nil {
			t.Fatal(err)
		}
	}
}

// Reads, appends and a follower's replication go on while passes swap
// segments, with a file pool bound small enough that segment files are
// closed and reopened under them: every read sees offsets strictly
// increasing, and the follower, fetching by offset across the gaps, ends
// with every key's latest value.
func TestCleanConcurrentWithReadsAppendsAndReplication(t *testing.T) {
	rng := seeded(t)
	pool := NewFilePool(4, quietLogger())
	leader, err := Open(t.TempDir(), compactConfig(), Options{Logger: quietLogger(), Files: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	follower, err := Open(t.TempDir(), compactConfig(), Options{Logger: quietLogger(), Files: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()

	// Records stamped now, so that tombstones stay for delete.retention.ms
	// (an hour): a follower copies a tombstone before the leader may drop
	// it, as in Kafka, where delete.retention.ms bounds how far behind a
	// reader may be. Stamped in 1970 they expired at once, and a follower
	// that had copied a key's older value but not yet its tombstone kept
	// the value (seen once under CI load).
	now := time.Now().UnixMilli()
	latest := keyedWorkload(t, leader, rng, 300, 3000, 20, 30, now, 0)
	stop := make(chan struct{})
	errc := make(chan error, 3)
	go func() { // reader
		for {
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
			last := int64(-1)
			for off := leader.LogStartOffset(); off < leader.LogEndOffset(); {
				b, err := leader.Read(off, 64<<10, leader.LogEndOffset(), true)
				if err != nil {
					errc <- fmt.Errorf("read %d: %w", off, err)
					return
				}
				if len(b) == 0 {
					break
				}
				_, err = batch.Split(b, func(h batch.Header, _ []byte) error {
					if h.BaseOffset <= last {
						return fmt.Errorf("batch at %d after %d", h.BaseOffset, last)
					}
					last, off = h.LastOffset(), h.NextOffset()
					return nil
				})
				if err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	go func() { // cleaner
		m := NewOffsetMap(0)
		for {
			select {
			case <-stop:
				errc <- nil
				return
			default:
			}
			if _, err := leader.Clean(context.Background(), m, nil, noLimit); err != nil {
				errc <- err
				return
			}
		}
	}()
	appendRng := rand.New(rand.NewPCG(rng.Uint64(), 1))
	for range 5 {
		for k, v := range keyedWorkload(t, leader, appendRng, 300, 1000, 20, 30, now, 0) {
			latest[k] = v
		}
		// The follower fetches what the leader has now, gaps and all.
		for off := follower.LogEndOffset(); off < leader.LogEndOffset(); off = follower.LogEndOffset() {
			b, err := leader.Read(off, 64<<10, leader.LogEndOffset(), true)
			if err != nil {
				t.Fatalf("follower fetch at %d: %v", off, err)
			}
			if len(b) == 0 {
				t.Fatalf("follower fetch at %d returned nothing below the leader's end %d", off, leader.LogEndOffset())
			}
			if _, err := follower.AppendReplicated(b); err != nil {
				t.Fatalf("follower append at %d: %v", off, err)
			}
		}
	}
	close(stop)
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	checkCompacted(t, leader, latest, false)
	checkCompacted(t, follower, latest, false)
	if st := pool.Stats(); st.Evictions == 0 {
		t.Logf("pool %+v: no evictions", st)
	}
}

// BenchmarkClean is the cleaner's throughput over a dirty log of 10,000
// keys and 200,000 updates (about 10 MB): MB/s is segment bytes read by
// the map pass and the rewrite, per second of a whole pass.
func BenchmarkClean(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewOffsetMap(16 << 20)
	for b.Loop() {
		b.StopTimer()
		cfg := compactConfig()
		cfg.SegmentBytes = 1 << 20
		l, err := Open(b.TempDir(), cfg, Options{Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		keyedWorkload(b, l, rng, 10_000, 200_000, 100, 100, 1_000_000, 0)
		if err := l.Roll(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := l.Clean(context.Background(), m, nil, noLimit)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(res.BytesRead)
		b.StopTimer()
		l.Close()
		b.StartTimer()
	}
}

// Which logs the agent's cleaner picks: the dirty ratio against
// min.cleanable.dirty.ratio, min.compaction.lag.ms holding young segments
// back, and max.compaction.lag.ms making an old dirty record overdue.
func TestCleanState(t *testing.T) {
	const hour = int64(time.Hour / time.Millisecond)
	cases := []struct {
		name                    string
		ratio                   float64
		minLag, maxLag          time.Duration
		compact                 bool
		eligible, overdue, none bool // none: no dirty bytes
	}{
		{name: "not compacted", compact: false},
		{name: "dirty above the ratio", ratio: 0.01, compact: true, eligible: true},
		{name: "ratio not reached", ratio: 0.5, compact: true},
		{name: "too young to compact", ratio: 0.01, minLag: 2 * time.Hour, compact: true, none: true},
		{name: "overdue despite the ratio", ratio: 0.5, maxLag: time.Hour, compact: true, eligible: true, overdue: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{ms: 10 * hour}
			cfg := compactConfig()
			l := openLog(t, vfs.Default, t.TempDir(), cfg, clock)
			defer l.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			// A clean part of 1,000 keys, a dirty part of 100 updates an
			// hour and a half old, and a record now in the active segment.
			keyedWorkload(t, l, rng, 1_000_000, 1000, 20, 0, clock.ms-3*hour, 0)
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit); err != nil {
				t.Fatal(err)
			}
			keyedWorkload(t, l, rng, 1_000_000, 100, 20, 0, clock.ms-hour-hour/2, 0)
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			keyedWorkload(t, l, rng, 10, 1, 1, 0, clock.ms, 0)
			cfg.Compact, cfg.MinCleanableDirtyRatio, cfg.MinCompactionLag, cfg.MaxCompactionLag = c.compact, c.ratio, c.minLag, c.maxLag
			if err := l.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			st := l.CleanState(noLimit)
			if st.Eligible != c.eligible || st.Overdue != c.overdue || c.compact && (st.DirtyBytes == 0) != c.none {
				t.Fatalf("%+v: want eligible %v, overdue %v, no dirty bytes %v", st, c.eligible, c.overdue, c.none)
			}
		})
	}
}

// cleanup.policy=compact alone keeps every segment by time and size; with
// compact,delete retention applies as usual.
func TestRetentionOfCompactedLogs(t *testing.T) {
	for _, withDelete := range []bool{false, true} {
		clock := &fakeClock{ms: 1_000_000}
		cfg := compactConfig()
		cfg.Delete, cfg.RetentionMs, cfg.RetentionBytes = withDelete, time.Minute, 1
		l := openLog(t, vfs.Default, t.TempDir(), cfg, clock)
		keyedWorkload(t, l, rand.New(rand.NewPCG(1, 1)), 10, 2000, 20, 0, clock.ms, 0)
		clock.ms += time.Hour.Milliseconds()
		n, err := l.ApplyRetention()
		if err != nil {
			t.Fatal(err)
		}
		if deleted := n > 0; deleted != withDelete {
			t.Fatalf("delete in policy %v: retention deleted %d segments", withDelete, n)
		}
		l.Close()
	}
}

// A pass with transactions, crashed at every rename and sync in turn: the
// aborted transaction's records go (its batch, the producer's last, stays
// empty), they never replace a committed value, nothing from the first
// open transaction on is cleaned, and the aborted-transaction index entry,
// whose data the pass still read, survives the pass, the crash and
// reopening.
func TestCleanTransactionsAcrossCrashes(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	base := vfs.NewMem()
	l := openLog(t, base, "/p", compactConfig(), clock)
	mustAppend(t, l, mkBatch(t, spec{records: 3}), 0)               // 0-2 k0..k2, committed
	mustAppend(t, l, txnBatch(t, 7, 0, 0, 3), 0)                    // 3-5 k0..k2 of 7
	mustAppend(t, l, marker(t, 7, 0, batch.ControlAbort, 1), 0)     // 6 aborts 7
	mustAppend(t, l, mkBatch(t, spec{records: 1, valueSize: 3}), 0) // 7 k0 again, plain
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, txnBatch(t, 8, 0, 0, 1), 0)                    // 8 k0 of 8, open
	mustAppend(t, l, mkBatch(t, spec{records: 3, valueSize: 5}), 0) // 9-11 k0..k2
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, mkBatch(t, spec{records: 1}), 0) // 12, active
	wantAborted := []AbortedTxn{{ProducerID: 7, FirstOffset: 3, LastOffset: 6, LastStableOffset: 7}}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(l *Log, when string) {
		t.Helper()
		if got := l.AbortedTransactions(0, l.LogEndOffset()); !slices.Equal(got, wantAborted) {
			t.Fatalf("%s: aborted transactions %+v, want %+v", when, got, wantAborted)
		}
		offsets := map[int64]int32{}
		for _, raw := range readAll(t, l) {
			h, err := batch.ParseHeader(raw)
			if err != nil {
				t.Fatal(err)
			}
			offsets[h.BaseOffset] = h.RecordCount
		}
		// k1 and k2 at 1-2 are the committed values: the aborted ones
		// at 3-5 do not replace them; the open transaction and its
		// sequel stay whole.
		for off, n := range map[int64]int32{0: 2, 3: 0, 6: 1, 7: 1, 8: 1, 9: 3} {
			if offsets[off] != n {
				t.Fatalf("%s: batch at %d holds %d records, want %d (log %v)", when, off, offsets[off], n, offsets)
			}
		}
	}
	for _, op := range []vfs.Op{vfs.OpRename, vfs.OpSync} {
		for n := 0; ; n++ {
			if n > 100 {
				t.Fatalf("%v: the pass never finished", op)
			}
			mem := base.CrashClone()
			faulty := vfs.NewFaulty(mem)
			l := openLog(t, faulty, "/p", compactConfig(), clock)
			if st := l.CleanState(noLimit); st.FirstUncleanable != 7 && st.FirstUncleanable != 8 {
				t.Fatalf("first uncleanable %d, want the open transaction's segment", st.FirstUncleanable)
			}
			faulty.FailAfter(op, n, errors.New("injected"))
			_, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit)
			abandon(l)
			faulty.Clear()
			after := openLog(t, mem.CrashClone(), "/p", compactConfig(), clock)
			if err == nil {
				check(after, fmt.Sprintf("%v passes", op))
			} else if got := after.AbortedTransactions(0, after.LogEndOffset()); !slices.Equal(got, wantAborted) {
				t.Fatalf("%v failing after %d: aborted transactions %+v, want %+v", op, n, got, wantAborted)
			}
			after.Close()
			if err == nil {
				break
			}
		}
	}
}

// A follower's truncation below the cleaner checkpoint moves it down, so
// that what is appended there again is cleaned; the lowered checkpoint
// survives a restart.
func TestTruncationLowersCleanerCheckpoint(t *testing.T) {
	rng := seeded(t)
	clock := &fakeClock{ms: 1_000_000}
	dir := t.TempDir()
	l := openLog(t, vfs.Default, dir, compactConfig(), clock)
	keyedWorkload(t, l, rng, 100, 3000, 20, 0, clock.ms, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit); err != nil {
		t.Fatal(err)
	}
	if st := l.CleanState(noLimit); st.FirstDirty != 3000 {
		t.Fatalf("checkpoint %d after a full pass, want 3000", st.FirstDirty)
	}
	if err := l.TruncateTo(1500); err != nil {
		t.Fatal(err)
	}
	end := l.LogEndOffset()
	keyedWorkload(t, l, rng, 100, 3000, 20, 0, clock.ms, 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if st := l.CleanState(noLimit); st.FirstDirty > end {
		t.Fatalf("checkpoint %d after truncating to %d and appending again", st.FirstDirty, end)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, vfs.Default, dir, compactConfig(), clock)
	defer l.Close()
	if st := l.CleanState(noLimit); st.FirstDirty > end {
		t.Fatalf("checkpoint %d after a restart, want at most %d", st.FirstDirty, end)
	}
}

// TestCleanStopsAtHighWatermark: a newer value of a key that is not yet
// below the high watermark does not clean away the committed one, which a
// new leader may be the only one to have; once the high watermark passes
// it, it does.
func TestCleanStopsAtHighWatermark(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", compactConfig(), nil)
	defer l.Close()
	mustAppend(t, l, mkBatch(t, spec{}), 1) // 0: k0, committed
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, mkBatch(t, spec{}), 1) // 1: k0 again, not yet replicated
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	const hw = 1
	if st := l.CleanState(hw); st.FirstUncleanable != 1 {
		t.Fatalf("with the high watermark at %d the first uncleanable offset is %d, want 1", hw, st.FirstUncleanable)
	}
	if _, err := l.Clean(context.Background(), NewOffsetMap(1<<20), nil, hw); err != nil {
		t.Fatal(err)
	}
	if b, err := l.Read(0, 1<<20, 1, true); err != nil || len(b) == 0 || binary.BigEndian.Uint64(b) != 0 {
		t.Fatalf("the committed value at offset 0 was cleaned away below the high watermark (%d bytes, %v)", len(b), err)
	}
	if _, err := l.Clean(context.Background(), NewOffsetMap(1<<20), nil, 2); err != nil {
		t.Fatal(err)
	}
	if b, err := l.Read(0, 1<<20, 2, true); err != nil || len(b) == 0 || binary.BigEndian.Uint64(b) != 1 {
		t.Fatalf("with both values committed, a read from 0 starts at offset %d, want 1 (%v)", binary.BigEndian.Uint64(b), err)
	}
}

// swapHoldFS holds the first directory fsync after a rename to a .swap
// name (a cleaning pass's commit) until release is closed.
type swapHoldFS struct {
	vfs.FS
	mu      sync.Mutex
	armed   bool
	once    sync.Once
	held    chan struct{} // closed when the commit's fsync is held
	release chan struct{}
}

func (f *swapHoldFS) Rename(from, to string) error {
	if strings.HasSuffix(to, swapSuffix) {
		f.mu.Lock()
		f.armed = true
		f.mu.Unlock()
	}
	return f.FS.Rename(from, to)
}

func (f *swapHoldFS) SyncDir(dir string) error {
	f.mu.Lock()
	hold := f.armed
	f.armed = false
	f.mu.Unlock()
	if hold {
		f.once.Do(func() {
			close(f.held)
			<-f.release
		})
	}
	return f.FS.SyncDir(dir)
}

// A cleaning pass's directory fsyncs do not hold appends up: while the
// fsync that commits a swap is held, the producer's appends complete, and
// retention, which would change the segments being swapped, waits for the
// swap and then runs.
func TestCleanSwapDoesNotHoldAppends(t *testing.T) {
	rng := seeded(t)
	clock := &fakeClock{ms: 1_000_000}
	fs := &swapHoldFS{FS: vfs.NewMem(), held: make(chan struct{}), release: make(chan struct{})}
	l := openLog(t, fs, "/p", compactConfig(), clock)
	defer func() { l.Close() }()
	latest := keyedWorkload(t, l, rng, 100, 3000, 20, 0, clock.ms, 0)

	cleaned := make(chan error, 1)
	go func() {
		_, err := l.Clean(context.Background(), NewOffsetMap(1<<20), nil, noLimit)
		cleaned <- err
	}()
	select {
	case <-fs.held:
	case err := <-cleaned:
		t.Fatalf("the pass ended (%v) without committing a swap", err)
	}

	appended := make(chan map[string][]byte, 1)
	go func() { appended <- keyedWorkload(t, l, rng, 100, 20, 20, 0, clock.ms, 0) }()
	var more map[string][]byte
	select {
	case more = <-appended:
	case <-time.After(10 * time.Second):
		close(fs.release)
		t.Fatal("an append waited for the cleaner's directory fsync")
	}
	retained := make(chan error, 1)
	go func() { _, err := l.ApplyRetention(); retained <- err }()
	select {
	case err := <-retained:
		close(fs.release)
		t.Fatalf("retention ran (%v) while a swap was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(fs.release)
	if err := <-cleaned; err != nil {
		t.Fatal(err)
	}
	if err := <-retained; err != nil {
		t.Fatal(err)
	}
	maps.Copy(latest, more)
	checkCompacted(t, l, latest, false)
}
