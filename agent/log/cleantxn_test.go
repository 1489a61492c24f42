package log

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// kvBatch is a batch of key=value pairs ("k" alone is a tombstone) from
// producer pid (-1: none), transactional when txn.
func kvBatch(t testing.TB, pid int64, seq int32, txn bool, tsMs int64, kvs ...string) []byte {
	t.Helper()
	opts := batch.DefaultBuildOptions()
	opts.BaseTimestamp = tsMs
	if pid >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, 0, seq
	}
	if txn {
		opts.Attributes = batch.AttrTransactional
	}
	var recs []batch.Record
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		r := batch.Record{OffsetDelta: int32(i), Key: []byte(k)}
		if ok {
			r.Value = []byte(v)
		}
		recs = append(recs, r)
	}
	b, err := batch.Build(opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// logView is what consumers read from the whole log below the last stable
// offset: each key's latest value in read order, at read_committed (the
// batches of AbortedTransactions left out, as a consumer does) and at
// read_uncommitted, and the markers' offsets.
type logView struct {
	committed, uncommitted map[string]string
	markers                []int64
	values                 []string // every record value, read_uncommitted
}

func readView(t testing.TB, l *Log) logView {
	t.Helper()
	v := logView{committed: map[string]string{}, uncommitted: map[string]string{}}
	lso := l.LastStableOffset(l.LogEndOffset())
	aborted := l.AbortedTransactions(l.LogStartOffset(), lso)
	last := int64(-1)
	for _, raw := range readAll(t, l) {
		h, recs, err := batch.Records(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset <= last {
			t.Fatalf("batch at %d after offset %d: offsets must increase", h.BaseOffset, last)
		}
		last = h.LastOffset()
		if h.BaseOffset >= lso {
			break
		}
		if h.IsControl() {
			v.markers = append(v.markers, h.BaseOffset)
			continue
		}
		skip := h.IsTransactional() && slices.ContainsFunc(aborted, func(a AbortedTxn) bool {
			return a.ProducerID == h.ProducerID && h.BaseOffset >= a.FirstOffset && h.BaseOffset <= a.LastOffset
		})
		for _, r := range recs {
			val := string(r.Value)
			if r.Value == nil {
				val = "<tombstone>"
			}
			v.values = append(v.values, val)
			v.uncommitted[string(r.Key)] = val
			if !skip {
				v.committed[string(r.Key)] = val
			}
		}
	}
	return v
}

// txnWorkload writes rounds of transactions from three producers,
// interleaved with each other and with plain writes of the same keys,
// each committed or aborted at random, and returns the latest committed
// value of each key. Aborted values start with "a", others with "c".
// Every transaction is decided; segments roll every few rounds.
func txnWorkload(t testing.TB, l *Log, seed int, rounds int, tsMs int64) map[string]string {
	t.Helper()
	rng := seededFrom(seed)
	latest := map[string]string{}
	seq := map[int64]int32{}
	for r := 0; r < rounds; r++ {
		pids := []int64{11, 12, 13}
		abort := map[int64]bool{}
		pending := map[int64]map[string]string{}
		for _, pid := range pids {
			abort[pid] = rng.IntN(3) == 0
			pending[pid] = map[string]string{}
		}
		for step := 0; step < 6; step++ {
			k := fmt.Sprintf("key%d", rng.IntN(20))
			if rng.IntN(3) == 0 {
				val := fmt.Sprintf("c-plain-%d-%d", r, step)
				mustAppend(t, l, kvBatch(t, -1, -1, false, tsMs, k+"="+val), 0)
				continue
			}
			pid := pids[rng.IntN(len(pids))]
			prefix := "c"
			if abort[pid] {
				prefix = "a"
			}
			val := fmt.Sprintf("%s-%d-%d-%d", prefix, pid, r, step)
			mustAppend(t, l, kvBatch(t, pid, seq[pid], true, tsMs, k+"="+val), 0)
			seq[pid]++
			pending[pid][k] = val
		}
		for _, pid := range pids {
			if len(pending[pid]) == 0 {
				continue
			}
			typ := batch.ControlCommit
			if abort[pid] {
				typ = batch.ControlAbort
			}
			mustAppend(t, l, marker(t, pid, 0, typ, 0), 0)
		}
		if r%3 == 2 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The latest committed value of each key is the last record of it in
	// offset order whose value is not from an aborted transaction.
	for _, raw := range readAll(t, l) {
		h, recs, err := batch.Records(raw, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h.IsControl() {
			continue
		}
		for _, rec := range recs {
			if !bytes.HasPrefix(rec.Value, []byte("a")) {
				latest[string(rec.Key)] = string(rec.Value)
			}
		}
	}
	return latest
}

func seededFrom(seed int) interface{ IntN(int) int } {
	return &lcg{s: uint64(seed)*2654435761 + 1}
}

// lcg is a tiny seeded generator, so the workload is the same every run.
type lcg struct{ s uint64 }

func (g *lcg) IntN(n int) int {
	g.s = g.s*6364136223846793005 + 1442695040888963407
	return int((g.s >> 33) % uint64(n))
}

// checkTxnCleaned checks a cleaned log: no aborted value left at either
// isolation level, the latest committed value of every key there at both,
// and the last stable offset at the log end (nothing open).
func checkTxnCleaned(t testing.TB, l *Log, latest map[string]string, when string) logView {
	t.Helper()
	v := readView(t, l)
	for _, val := range v.values {
		if strings.HasPrefix(val, "a") {
			t.Fatalf("%s: aborted value %s still in the log", when, val)
		}
	}
	for k, want := range latest {
		if v.committed[k] != want || v.uncommitted[k] != want {
			t.Fatalf("%s: key %s reads %q committed, %q uncommitted; want latest committed %q",
				when, k, v.committed[k], v.uncommitted[k], want)
		}
	}
	if lso := l.LastStableOffset(l.LogEndOffset()); lso != l.LogEndOffset() {
		t.Fatalf("%s: last stable offset %d, want the log end %d", when, lso, l.LogEndOffset())
	}
	return v
}

// The cleaner removes aborted transactional data at both isolation
// levels and compacts committed transactional records like any record:
// the latest committed value of each key survives, an aborted value never
// shadows it, and the cleaned log reopens, and recovers from a crash with
// its producer state rebuilt from the log start, to the same view.
func TestCleanRemovesAbortedTransactions(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	dir := t.TempDir()
	l := openLog(t, vfs.Default, dir, compactConfig(), clock)
	latest := txnWorkload(t, l, 1, 60, clock.ms)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, kvBatch(t, -1, -1, false, clock.ms, "filler=x"), 0)
	before := readView(t, l)
	abortedBefore := 0
	for _, val := range before.values {
		if strings.HasPrefix(val, "a") {
			abortedBefore++
		}
	}
	if abortedBefore == 0 || len(l.AbortedTransactions(0, l.LogEndOffset())) == 0 {
		t.Fatal("the workload aborted nothing: the test would prove nothing")
	}
	res, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pass: %+v; %d aborted values before", res, abortedBefore)
	v := checkTxnCleaned(t, l, latest, "after the pass")
	if len(v.markers) != len(before.markers) {
		t.Fatalf("%d markers after the first pass, want all %d: their transactions had data", len(v.markers), len(before.markers))
	}
	// Every entry left in the index still has its marker.
	for _, a := range l.AbortedTransactions(0, l.LogEndOffset()) {
		if !slices.Contains(v.markers, a.LastOffset) {
			t.Fatalf("index entry %+v without its marker (markers %v)", a, v.markers)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, vfs.Default, dir, compactConfig(), clock)
	checkTxnCleaned(t, l, latest, "after reopening")
	abandon(l)
	removeSnapshots(t, dir)
	l = openLog(t, vfs.Default, dir, compactConfig(), clock)
	defer l.Close()
	checkTxnCleaned(t, l, latest, "after a crash and a replay from the log start")
}

// Nothing at or past the first open transaction is cleaned: its batches,
// and everything after them, are read back byte for byte.
func TestCleanStopsAtFirstUnstableOffset(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	l := openLog(t, vfs.NewMem(), "/p", compactConfig(), clock)
	defer l.Close()
	txnWorkload(t, l, 2, 9, clock.ms)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	open := l.LogEndOffset()
	mustAppend(t, l, kvBatch(t, 21, 0, true, clock.ms, "key1=a-open"), 0)
	mustAppend(t, l, kvBatch(t, -1, -1, false, clock.ms, "key1=c-after", "key2=c-after"), 0)
	mustAppend(t, l, kvBatch(t, -1, -1, false, clock.ms, "key1=c-after2"), 0)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, kvBatch(t, -1, -1, false, clock.ms, "key1=c-active"), 0)
	if st := l.CleanState(noLimit); st.FirstUncleanable > open {
		t.Fatalf("first uncleanable %d past the open transaction at %d", st.FirstUncleanable, open)
	}
	tail := func() [][]byte {
		var out [][]byte
		for _, raw := range readAll(t, l) {
			if h, _ := batch.ParseHeader(raw); h.BaseOffset >= open {
				out = append(out, raw)
			}
		}
		return out
	}
	want := tail()
	if _, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit); err != nil {
		t.Fatal(err)
	}
	if got := tail(); !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("the cleaner changed the log at or past the first unstable offset %d", open)
	}
	wantLSO(t, l, open)
}

// A marker stays while its transaction has data in the log; once the data
// is gone, a pass stamps it with a delete horizon delete.retention.ms
// ahead, and the first pass after the horizon drops it. The aborted
// index entry goes with its data. All of it survives reopening.
func TestCleanDropsMarkersAfterDeleteHorizon(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	dir := t.TempDir()
	cfg := compactConfig()
	l := openLog(t, vfs.Default, dir, cfg, clock)
	ts := clock.ms
	mustAppend(t, l, kvBatch(t, 7, 0, true, ts, "k0=a-7"), 0)    // 0 aborted
	mustAppend(t, l, marker(t, 7, 0, batch.ControlAbort, 0), 0)  // 1
	mustAppend(t, l, kvBatch(t, 8, 0, true, ts, "k1=c-8"), 0)    // 2 committed, stays latest
	mustAppend(t, l, marker(t, 8, 0, batch.ControlCommit, 0), 0) // 3
	mustAppend(t, l, kvBatch(t, 9, 0, true, ts, "k2=c-9"), 0)    // 4 committed, replaced at 10
	mustAppend(t, l, marker(t, 9, 0, batch.ControlCommit, 0), 0) // 5
	// Later transactions of 7 and 9, so that 0 and 4 are not their
	// producers' last batches (those stay, emptied).
	mustAppend(t, l, kvBatch(t, 7, 1, true, ts, "k5=c-7"), 0)        // 6
	mustAppend(t, l, marker(t, 7, 0, batch.ControlCommit, 0), 0)     // 7
	mustAppend(t, l, kvBatch(t, 9, 1, true, ts, "k6=c-9"), 0)        // 8
	mustAppend(t, l, marker(t, 9, 0, batch.ControlCommit, 0), 0)     // 9
	mustAppend(t, l, kvBatch(t, -1, -1, false, ts, "k2=c-plain"), 0) // 10
	dirty := func() {
		t.Helper()
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, kvBatch(t, -1, -1, false, clock.ms, "filler=c"), 0)
	}
	clean := func(when string) logView {
		t.Helper()
		if _, err := l.Clean(context.Background(), NewOffsetMap(0), nil, noLimit); err != nil {
			t.Fatal(err)
		}
		latest := map[string]string{"k1": "c-8", "k2": "c-plain", "k5": "c-7", "k6": "c-9", "filler": "c"}
		return checkTxnCleaned(t, l, latest, when)
	}
	markersBelow := func(v logView, end int64) []int64 {
		return slices.DeleteFunc(slices.Clone(v.markers), func(o int64) bool { return o >= end })
	}
	dirty()
	v := clean("first pass")
	if got := markersBelow(v, 11); !slices.Equal(got, []int64{1, 3, 5, 7, 9}) {
		t.Fatalf("first pass kept markers %v, want all: each transaction had data when the pass began", got)
	}
	wantAborted(t, l, 0, 11, []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2}})

	clock.ms += 1000
	dirty()
	v = clean("second pass")
	if got := markersBelow(v, 11); !slices.Equal(got, []int64{1, 3, 5, 7, 9}) {
		t.Fatalf("second pass kept markers %v, want all until delete.retention.ms passes", got)
	}
	wantAborted(t, l, 0, 11, nil)
	horizon := clock.ms + cfg.DeleteRetention.Milliseconds()
	for _, raw := range readAll(t, l) {
		h, _ := batch.ParseHeader(raw)
		got, ok := h.DeleteHorizon()
		switch stamped := h.BaseOffset == 1 || h.BaseOffset == 5; {
		case stamped && (!ok || got != horizon):
			t.Fatalf("marker at %d: delete horizon %d (%v), want %d", h.BaseOffset, got, ok, horizon)
		case !stamped && ok:
			t.Fatalf("batch at %d stamped with a delete horizon; its data is still there", h.BaseOffset)
		}
	}

	// A follower copies the stamped markers as they are, and keeps the
	// same view.
	follower := openLog(t, vfs.NewMem(), "/f", cfg, clock)
	for _, raw := range readAll(t, l) {
		if _, err := follower.AppendReplicated(raw); err != nil {
			t.Fatalf("follower: %v", err)
		}
	}
	if got, want := readView(t, follower), readView(t, l); !slices.Equal(got.markers, want.markers) || !maps.Equal(got.committed, want.committed) {
		t.Fatalf("follower reads %+v, leader %+v", got, want)
	}
	follower.Close()

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, vfs.Default, dir, cfg, clock)
	defer func() { l.Close() }()
	clock.ms = horizon - 1
	dirty()
	v = clean("a pass before the horizon")
	if got := markersBelow(v, 11); !slices.Equal(got, []int64{1, 3, 5, 7, 9}) {
		t.Fatalf("a pass before the horizon kept markers %v, want all", got)
	}
	clock.ms = horizon
	dirty()
	v = clean("a pass after the horizon")
	if got := markersBelow(v, 11); !slices.Equal(got, []int64{3, 7, 9}) {
		t.Fatalf("a pass after the horizon kept markers %v, want 3, 7 and 9, whose data is there", got)
	}
	wantLSO(t, l, l.LogEndOffset())
	// A crash, and producer state replayed from the log start: no
	// transaction is left open by a marker gone before its data.
	abandon(l)
	removeSnapshots(t, dir)
	l = openLog(t, vfs.Default, dir, cfg, clock)
	v = checkTxnCleaned(t, l, map[string]string{"k1": "c-8", "k2": "c-plain", "k5": "c-7", "k6": "c-9", "filler": "c"}, "after a crash")
	if got := markersBelow(v, 11); !slices.Equal(got, []int64{3, 7, 9}) {
		t.Fatalf("after a crash: markers %v, want 3, 7 and 9", got)
	}
}
