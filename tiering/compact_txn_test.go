package tiering

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log"
	rb "github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// The transaction rules of a remote pass, with agent/log's real rules
// (BatchCleaner) over real record batches, as the agent wires them.

// txnLogBuilder writes batches of one record each into fakeLog segments,
// with their transaction indexes.
type txnLogBuilder struct {
	t     *testing.T
	l     *fakeLog
	data  []byte
	base  int64
	next  int64
	index []txnindex.Entry
	open  map[int64]int64 // producer -> first offset of its open transaction
}

func (b *txnLogBuilder) add(raw []byte) {
	rb.SetBaseOffset(raw, b.next)
	b.data = append(b.data, raw...)
	b.next++
}

// put appends a record: by the plain producer (pid < 0) or in pid's
// transaction.
func (b *txnLogBuilder) put(pid int64, key, value string) {
	o := rb.DefaultBuildOptions()
	if pid >= 0 {
		o.ProducerID, o.ProducerEpoch, o.BaseSequence, o.Attributes = pid, 0, 0, rb.AttrTransactional
		if _, ok := b.open[pid]; !ok {
			b.open[pid] = b.next
		}
	}
	o.BaseTimestamp = time.Now().UnixMilli()
	raw, err := rb.Build(o, []rb.Record{{Key: []byte(key), Value: []byte(value)}})
	if err != nil {
		b.t.Fatal(err)
	}
	b.add(raw)
}

// end writes pid's marker and, for an abort, its index entry.
func (b *txnLogBuilder) end(pid int64, commit bool) {
	m := rb.Marker{Type: rb.ControlAbort}
	if commit {
		m.Type = rb.ControlCommit
	}
	raw, err := rb.BuildMarker(pid, 0, m, time.Now().UnixMilli())
	if err != nil {
		b.t.Fatal(err)
	}
	if !commit {
		b.index = append(b.index, txnindex.Entry{ProducerID: pid, FirstOffset: b.open[pid], LastOffset: b.next, LastStableOffset: b.next})
	}
	delete(b.open, pid)
	b.add(raw)
}

// cut ends the segment being written.
func (b *txnLogBuilder) cut() {
	s := fakeSeg{Segment: Segment{Base: b.base, Next: b.next, Size: int64(len(b.data)), MaxTimestamp: time.Now().UnixMilli()}, data: b.data}
	if len(b.index) > 0 {
		s.txn = txnindex.Encode(b.index)
	}
	b.l.segs = append(b.l.segs, s)
	b.l.end = b.next
	b.data, b.index, b.base = nil, nil, b.next
}

// bucketRecord is a record, or a marker, as the bucket holds it.
type bucketRecord struct {
	offset     int64
	key, value string
	marker     string // "commit" or "abort" for a control batch
	horizon    bool   // the control batch carries a delete horizon
}

// readBucket returns every record of the partition's objects, in offset
// order, and the transaction index entries of the manifest's objects.
func readBucket(t *testing.T, p *Partition) ([]bucketRecord, []txnindex.Entry) {
	t.Helper()
	ctx := context.Background()
	_, all := manifestEntries(t, p)
	var recs []bucketRecord
	var index []txnindex.Entry
	for _, e := range all {
		b, err := p.getAll(ctx, p.prefix+e.Object+suffixLog, e.Size)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rb.Split(b, func(hd rb.Header, raw []byte) error {
			if hd.IsControl() {
				m, err := rb.ParseMarker(raw)
				_, horizon := hd.DeleteHorizon()
				recs = append(recs, bucketRecord{offset: hd.BaseOffset, marker: m.Type.String(), horizon: horizon})
				return err
			}
			_, rs, err := rb.Records(raw, 1<<20)
			for _, r := range rs {
				recs = append(recs, bucketRecord{offset: hd.BaseOffset + int64(r.OffsetDelta), key: string(r.Key), value: string(r.Value)})
			}
			return err
		}); err != nil {
			t.Fatalf("%s: %v", e.Object, err)
		}
		if e.TxnIndexSize > 0 {
			idx, err := p.txnIndex(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			index = append(index, idx...)
		}
	}
	return recs, index
}

// TestCompactRemoteTransactions: a producer's committed and aborted
// transactions, and a second producer's aborted one, interleave with plain
// writes of the same keys over several uploaded segments. A remote pass
// removes the aborted records and keeps every key's latest committed
// value; an aborted transaction whose marker lies above the run is left
// whole until a later pass reaches it. Markers stay while their data does,
// then carry a delete horizon, and go after it; each object's transaction
// index names exactly the aborted transactions with records in it.
func TestCompactRemoteTransactions(t *testing.T) {
	ctx := context.Background()
	bucket, err := objstore.NewFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := &fakeLog{}
	b := &txnLogBuilder{t: t, l: l, open: map[int64]int64{}}
	const a, c, plain = 1, 2, -1
	b.put(plain, "k0", "p0")
	b.put(plain, "k1", "p1")
	b.put(a, "k0", "committed-1")
	b.put(a, "k2", "committed-1")
	b.end(a, true)
	b.cut() // [0, 5)
	b.put(a, "k1", "aborted-2")
	b.put(c, "k2", "aborted-c")
	b.put(plain, "k3", "p3")
	b.put(a, "k0", "aborted-2")
	b.end(a, false)
	b.cut() // [5, 10)
	b.put(a, "k1", "committed-3")
	b.put(plain, "k4", "p4")
	b.end(a, true)
	b.end(c, false)
	b.cut() // [10, 14)
	b.put(plain, "k3", "p3b")
	b.put(a, "k4", "aborted-4") // its marker is in the manifest's last entry, above the run
	b.cut()                     // [14, 16)
	b.end(a, false)
	b.cut() // [16, 17): the anchor
	b.put(plain, "tail", "active")
	b.cut() // the active segment
	want := map[string]string{"k0": "committed-1", "k1": "committed-3", "k2": "committed-1", "k3": "p3b", "k4": "p4"}

	tr := newTierer(t, bucket)
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tr.UploadOnce(ctx)
	m := log.NewOffsetMap(1 << 20)
	now := time.Now()
	compact := func(at time.Time) CompactResult {
		t.Helper()
		o := compactOptions(t)
		o.Now, o.DeleteRetentionMs = at, time.Hour.Milliseconds()
		o.NewRules = func(aborted []txnindex.Entry) Rules {
			return log.NewBatchCleaner(m, log.RemotePass{Now: at, DeleteRetention: time.Hour, Aborted: aborted})
		}
		o.NewSegment = func(base int64) SegmentBuilder { return log.NewSegmentBuilder(base, 4096) }
		res, err := p.Compact(ctx, o)
		if err != nil || res.ObjectsBefore == 0 {
			t.Fatalf("pass at %v: %+v, %v", at.Sub(now), res, err)
		}
		return res
	}
	// check reads the bucket: the latest values, no aborted record other
	// than those of undecided, and the markers and index entries wanted.
	check := func(pass string, want map[string]string, undecided []string, markers map[int64]string, index []int64) {
		t.Helper()
		recs, idx := readBucket(t, p)
		got, gotMarkers, seen := map[string]string{}, map[int64]string{}, map[string]bool{}
		last := int64(-1)
		for _, r := range recs {
			if r.offset <= last {
				t.Fatalf("%s: offset %d after %d", pass, r.offset, last)
			}
			last = r.offset
			switch {
			case r.marker != "":
				gotMarkers[r.offset] = r.marker
				if r.horizon {
					gotMarkers[r.offset] += "+horizon"
				}
			case strings.HasPrefix(r.value, "aborted-"):
				if !slices.Contains(undecided, r.value) {
					t.Fatalf("%s: the bucket holds the aborted record %s=%s at %d", pass, r.key, r.value, r.offset)
				}
			default:
				got[r.key] = r.value
			}
			seen[r.value] = true
		}
		for _, v := range undecided {
			if !seen[v] {
				t.Fatalf("%s: the undecided record %s went before its marker was in a run", pass, v)
			}
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: key %s reads %q, want the latest committed %q (bucket: %+v)", pass, k, got[k], v, recs)
			}
		}
		if fmt.Sprint(gotMarkers) != fmt.Sprint(markers) {
			t.Fatalf("%s: markers %v, want %v", pass, gotMarkers, markers)
		}
		var gotIndex []int64
		for _, e := range idx {
			if gotMarkers[e.LastOffset] == "" || gotMarkers[e.LastOffset][:5] != "abort" {
				t.Fatalf("%s: index entry %+v names no abort marker", pass, e)
			}
			gotIndex = append(gotIndex, e.LastOffset)
		}
		if fmt.Sprint(gotIndex) != fmt.Sprint(index) {
			t.Fatalf("%s: transaction index entries end at %v, want %v", pass, gotIndex, index)
		}
		// read_committed below the local log: what the bucket's indexes give.
		rc, _, err := p.AbortedTransactions(ctx, 0, l.end)
		if err != nil || len(rc) != len(index) {
			t.Fatalf("%s: aborted transactions for a read_committed fetch: %+v, %v", pass, rc, err)
		}
	}

	// Pass 1: the aborted data of the run goes, the markers stay (their
	// transactions had data in the pass), with the index entries of both
	// aborted ones. Producer a's fourth transaction is undecided.
	compact(now)
	check("pass 1", want, []string{"aborted-4"},
		map[int64]string{4: "commit", 9: "abort", 12: "commit", 13: "abort", 16: "abort"}, []int64{9, 13, 16})

	// Each later pass needs dirty bytes: plain updates of the committed
	// keys, so that the transactions' data goes.
	// (The updates' segment is followed by one more, the manifest's
	// last entry, so that they are in the run.)
	more := func(kv ...string) {
		for i := 0; i < len(kv); i += 2 {
			b.put(plain, kv[i], kv[i+1])
		}
		b.cut()
		b.put(plain, "anchor", "")
		b.cut()
		b.put(plain, "tail", "active")
		b.cut()
		tr.UploadOnce(ctx)
	}
	more("k0", "p0b", "k1", "p1b", "k2", "p2b")
	want = map[string]string{"k0": "p0b", "k1": "p1b", "k2": "p2b", "k3": "p3b", "k4": "p4"}
	// Pass 2: the fourth transaction's marker is in the run: its record
	// goes. The committed data went in this pass, so its markers stay;
	// the first aborted transactions' markers have no data left, so they
	// are stamped with a delete horizon and their index entries go.
	compact(now.Add(time.Minute))
	check("pass 2", want, nil,
		map[int64]string{4: "commit", 9: "abort+horizon", 12: "commit", 13: "abort+horizon", 16: "abort"}, []int64{16})

	more("k5", "p5")
	compact(now.Add(2 * time.Minute))
	check("pass 3, before the horizons", want, nil,
		map[int64]string{4: "commit+horizon", 9: "abort+horizon", 12: "commit+horizon", 13: "abort+horizon", 16: "abort+horizon"}, nil)

	more("k6", "p6")
	compact(now.Add(61*time.Minute + 30*time.Second)) // the horizons of 9 and 13 are at 61m, the others' at 62m
	check("pass 4, past the first horizons", want, nil,
		map[int64]string{4: "commit+horizon", 12: "commit+horizon", 16: "abort+horizon"}, nil)

	more("k7", "p7")
	compact(now.Add(3 * time.Hour))
	check("pass 5, past every horizon", want, nil, map[int64]string{}, nil)
	checkCovers(t, p, l.segs[len(l.segs)-1].Base) // all but the active segment
}
