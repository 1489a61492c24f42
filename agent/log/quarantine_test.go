package log

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-streaming/strata/internal/vfs"
)

// W is 0 for a new log and stays there as it grows; a log whose directory
// has no checks file (one written by a build before the check) gets its log
// end; a follower's restart raises it. Verdicts survive a reopen, a bad one
// names its batch by CRC as well as offset, and runs of checked batches
// from any starting point become ranges that merge.
func TestDecompressionChecks(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/p", testConfig(), nil)
	for range 5 {
		mustAppend(t, l, mkBatch(t, spec{records: 2}), 0) // offsets 0..9
	}
	if w := l.ValidatedFrom(); w != 0 {
		t.Fatalf("new log: W %d, want 0", w)
	}
	l.Close()

	// A directory as a build without the check left it.
	if err := fs.Remove(filepath.Join("/p", checksFileName)); err != nil {
		t.Fatal(err)
	}
	l = openLog(t, fs, "/p", testConfig(), nil)
	if w := l.ValidatedFrom(); w != 10 {
		t.Fatalf("first open by a checking build: W %d, want the log end 10", w)
	}
	mustAppend(t, l, mkBatch(t, spec{}), 0)
	// A read from 4 (a consumer resuming mid-log), then one from 0 that
	// reaches it: one range, 0..7.
	if err := l.RecordChecks(0, []CheckVerdict{
		{BadBatch: BadBatch{Base: 4, CRC: 44}, Next: 6, Bad: true},
		{BadBatch: BadBatch{Base: 6, CRC: 66}, Next: 8},
	}); err != nil {
		t.Fatal(err)
	}
	if known, bad := l.CheckedVerdict(6, 66); !known || bad {
		t.Errorf("a batch checked by a read from the middle: known %v bad %v", known, bad)
	}
	if known, _ := l.CheckedVerdict(2, 2); known {
		t.Error("a batch no read reached is known")
	}
	if err := l.RecordChecks(0, []CheckVerdict{
		{BadBatch: BadBatch{Base: 0, CRC: 1}, Next: 2},
		{BadBatch: BadBatch{Base: 2, CRC: 2}, Next: 4},
	}); err != nil {
		t.Fatal(err)
	}
	if got := l.checks.checked; !slices.Equal(got, []checkedRange{{0, 8}}) {
		t.Errorf("checked ranges %v, want [0, 8) merged", got)
	}
	l.Close()

	l = openLog(t, fs, "/p", testConfig(), nil)
	defer l.Close()
	if w := l.ValidatedFrom(); w != 10 {
		t.Fatalf("after reopen: W %d, want 10", w)
	}
	for _, c := range []struct {
		base        int64
		crc         uint32
		known, bad  bool
		description string
	}{
		{0, 1, true, false, "checked good"},
		{2, 2, true, false, "checked good"},
		{4, 44, true, true, "checked bad"},
		{4, 45, true, false, "another batch at a bad batch's offset, in a checked range"},
		{6, 66, true, false, "checked good"},
		{8, 88, false, false, "never checked"},
	} {
		if known, bad := l.CheckedVerdict(c.base, c.crc); known != c.known || bad != c.bad {
			t.Errorf("%s (%d, crc %d): known %v bad %v, want %v %v", c.description, c.base, c.crc, known, bad, c.known, c.bad)
		}
	}
	// Once the partition starts past them, verdicts are dropped.
	if err := l.RecordChecks(6, nil); err != nil {
		t.Fatal(err)
	}
	if known, bad := l.CheckedVerdict(4, 44); known || bad {
		t.Errorf("below the start: known %v bad %v, want forgotten", known, bad)
	}
	if got := l.checks.checked; !slices.Equal(got, []checkedRange{{6, 8}}) {
		t.Errorf("checked ranges %v after the start moved to 6, want [6, 8)", got)
	}

	// A follower restarting at 500 did not check what lies below.
	f := openLog(t, fs, "/f", testConfig(), nil)
	defer f.Close()
	if err := f.RestartAt(500, nil); err != nil {
		t.Fatal(err)
	}
	if w := f.ValidatedFrom(); w != 500 {
		t.Errorf("after RestartAt(500): W %d, want 500", w)
	}

	// A crash loses grown ranges not yet written (those batches are
	// checked again), never a bad verdict, which is written at once.
	clock := &fakeClock{ms: 1_700_000_000_000} // stands still: no periodic write
	g := openLog(t, fs, "/g", testConfig(), clock)
	if err := g.RecordChecks(0, []CheckVerdict{{BadBatch: BadBatch{Base: 0, CRC: 1}, Next: 2, Bad: true}}); err != nil {
		t.Fatal(err)
	}
	if err := g.RecordChecks(0, []CheckVerdict{{BadBatch: BadBatch{Base: 2, CRC: 2}, Next: 4}}); err != nil {
		t.Fatal(err)
	}
	abandon(g)
	g = openLog(t, fs, "/g", testConfig(), clock)
	defer g.Close()
	if known, bad := g.CheckedVerdict(0, 1); !known || !bad {
		t.Errorf("after a crash: bad verdict known %v bad %v", known, bad)
	}
	if known, _ := g.CheckedVerdict(2, 2); known {
		t.Error("after a crash: a range survived that was due to be written only after a second or at Close")
	}
}

// addRange keeps the ranges sorted, disjoint and apart, merging what
// overlaps or touches, and forgets the shortest past maxCheckedRanges.
func TestCheckedRanges(t *testing.T) {
	var c decompressionChecks
	for _, r := range []checkedRange{{10, 20}, {30, 40}, {20, 25}, {50, 60}, {5, 12}, {38, 52}, {0, 1}} {
		c.addRange(r)
	}
	if want := []checkedRange{{0, 1}, {5, 25}, {30, 60}}; !slices.Equal(c.checked, want) {
		t.Fatalf("ranges %v, want %v", c.checked, want)
	}
	if c.addRange(checkedRange{31, 40}) {
		t.Error("a covered range grew the ranges")
	}
	for i := range int64(maxCheckedRanges) {
		c.addRange(checkedRange{1000 + 10*i, 1000 + 10*i + 2})
	}
	if len(c.checked) != maxCheckedRanges || c.checked[0] != (checkedRange{5, 25}) {
		t.Fatalf("%d ranges, first %v: want %d, the shortest ([0, 1)) forgotten", len(c.checked), c.checked[0], maxCheckedRanges)
	}
}

// FuzzDecompressionChecksFile: whatever the checks file holds (framed, so
// that the payload decoder is reached, or raw), the log opens without a
// panic; a payload that does not decode leaves a first open's state (W at
// the log end, 0 here), and one that does gives a sorted, bounded bad list.
func FuzzDecompressionChecksFile(f *testing.F) {
	valid := binary.BigEndian.AppendUint64(nil, 10)
	valid = binary.BigEndian.AppendUint32(valid, 1)
	valid = binary.BigEndian.AppendUint64(valid, 0)
	valid = binary.BigEndian.AppendUint64(valid, 4)
	valid = binary.BigEndian.AppendUint32(valid, 1)
	valid = binary.BigEndian.AppendUint64(valid, 2)
	valid = binary.BigEndian.AppendUint32(valid, 99)
	f.Add(valid, true)
	f.Add(valid[:27], true)
	f.Add(valid, false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, payload []byte, framed bool) {
		mem := vfs.NewMem()
		mem.MkdirAll("/p", 0o755)
		b := payload
		if framed {
			b = encodeFrame(magicChecks, payload)
		}
		fl, _ := mem.Create(filepath.Join("/p", checksFileName))
		fl.Write(b)
		fl.Close()
		l, err := Open("/p", testConfig(), Options{FS: mem, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer l.Close()
		c := &l.checks
		if len(c.bad) > maxBadBatches || !slices.IsSortedFunc(c.bad, compareBad) {
			t.Fatalf("%d bad batches, sorted %v", len(c.bad), slices.IsSortedFunc(c.bad, compareBad))
		}
		for i, r := range c.checked {
			if r.From >= r.To || i > 0 && c.checked[i-1].To >= r.From || i >= maxCheckedRanges {
				t.Fatalf("checked ranges %v", c.checked)
			}
		}
		if l.decodeChecks(b) != nil && l.ValidatedFrom() != 0 {
			t.Fatalf("an undecodable file left W %d, want the log end 0", l.ValidatedFrom())
		}
	})
}
