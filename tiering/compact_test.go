package tiering

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// The fake log's batches carry no records, so these tests check what
// compact.go and compactswap.go own (the run, the objects, the swap and
// its races); the records' rules are agent/log's, checked end to end in
// internal/e2e's TestTieredCompaction.

// keepAll is Rules that keeps every batch, and every aborted transaction
// it starts with in the index.
type keepAll struct{ index []txnindex.Entry }

func (*keepAll) NoteProducer([]byte) error { return nil }
func (*keepAll) Map([]byte) (bool, error)  { return true, nil }
func (*keepAll) Filter(raw []byte, _ int64, _ bool) ([]byte, int64, error) {
	return raw, 0, nil
}
func (k *keepAll) TakeIndex() []txnindex.Entry {
	out := k.index
	k.index = nil
	return out
}

// sizeOnly is a SegmentBuilder without indexes.
type sizeOnly struct{ size, maxTs int64 }

func (s *sizeOnly) Add(raw []byte) error { s.size += int64(len(raw)); return nil }
func (s *sizeOnly) Size() int64          { return s.size }
func (s *sizeOnly) MaxTimestamp() int64  { return s.maxTs }
func (s *sizeOnly) OffsetIndex() []byte  { return nil }
func (s *sizeOnly) TimeIndex() []byte    { return nil }

func compactOptions(t *testing.T) CompactOptions {
	return CompactOptions{Now: time.Now(), LastStable: 1 << 40, SegmentBytes: 1 << 20, TempDir: t.TempDir(),
		NewRules: func(aborted []txnindex.Entry) Rules { return &keepAll{index: aborted} }, NewSegment: func(int64) SegmentBuilder { return &sizeOnly{maxTs: -1} }}
}

// hookBucket runs hook once, before the first PUT of a .log object made
// while armed: in the middle of a compaction pass, after its downloads.
type hookBucket struct {
	objstore.Bucket
	mu    sync.Mutex
	armed bool
	hook  func()
}

func (b *hookBucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, o objstore.PutOptions) (string, error) {
	b.mu.Lock()
	fire := b.armed && strings.HasSuffix(key, suffixLog)
	if fire {
		b.armed = false
	}
	b.mu.Unlock()
	if fire {
		b.hook()
	}
	return b.Bucket.PutReader(ctx, key, r, size, o)
}

// tieredLog uploads n segments of 10 offsets (page size 4) and returns
// the partition.
func tieredLog(t *testing.T, b objstore.Bucket, n int) (*Tierer, *Partition, *fakeLog) {
	ctx := context.Background()
	l := &fakeLog{}
	for i := range n + 1 {
		l.add(10, int64(i))
	}
	tr := newTierer(t, b)
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tr.UploadOnce(ctx)
	if h := p.head(); h.Segments() != n {
		t.Fatalf("uploaded %d segments, want %d", h.Segments(), n)
	}
	return tr, p, l
}

// checkCovers fails unless the manifest's entries cover [0, next) in order
// and every offset reads back from the bucket.
func checkCovers(t *testing.T, p *Partition, next int64) []Entry {
	t.Helper()
	ctx := context.Background()
	h, all := manifestEntries(t, p)
	at := int64(0)
	for _, e := range all {
		if e.Base > at {
			t.Fatalf("the manifest skips [%d, %d): %+v", at, e.Base, all)
		}
		at = max(at, e.Next)
	}
	if at != next {
		t.Fatalf("the manifest ends at %d, want %d", at, next)
	}
	p.setHead(h)
	for off := int64(0); off < next; off += 5 {
		if b, err := p.Read(ctx, off, 1<<20, true); err != nil || len(b) == 0 {
			t.Fatalf("read %d: %d bytes, %v", off, len(b), err)
		}
	}
	return all
}

// TestCompactSwapKeepsConcurrentUpload: a segment uploaded while a pass
// runs (filling a manifest page meanwhile) survives the swap.
func TestCompactSwapKeepsConcurrentUpload(t *testing.T) {
	ctx := context.Background()
	hb := &hookBucket{Bucket: objstore.NewMem()}
	tr, p, l := tieredLog(t, hb, 6)
	hb.hook = func() {
		l.add(10, 99)
		l.add(10, 100)
		tr.UploadOnce(ctx) // two more segments: the tail fills a page
	}
	hb.armed = true
	res, err := p.Compact(ctx, compactOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.ObjectsBefore != 5 || res.ObjectsAfter != 1 {
		t.Fatalf("compacted %d objects into %d, want 5 into 1 (the last entry stays)", res.ObjectsBefore, res.ObjectsAfter)
	}
	all := checkCovers(t, p, 80)
	if len(all) != 4 || !all[0].Compacted || all[1].Compacted {
		t.Fatalf("manifest after the swap: %+v", all)
	}
	t.Logf("objects before %d after %d, bytes read %d written %d, GETs %d PUTs %d",
		res.ObjectsBefore, res.ObjectsAfter, res.BytesRead, res.BytesWritten, res.Gets, res.Puts)
}

// TestCompactFencedByNewLeader: a leader elected while the old one
// compacts writes the manifest; the old leader's swap fails, and nothing
// the manifest names is lost or deleted.
func TestCompactFencedByNewLeader(t *testing.T) {
	ctx := context.Background()
	hb := &hookBucket{Bucket: objstore.NewMem()}
	_, p, l := tieredLog(t, hb, 6)
	hb.hook = func() {
		// The new leader (epoch 2) uploads the next segment.
		l.add(10, 99)
		v, _ := l.OpenSealed(60)
		b := hb.Bucket
		for _, s := range []string{suffixLog, suffixIndex, suffixTimeIndex} {
			b.Put(ctx, prefix+"segments/new"+s, nil, objstore.PutOptions{})
		}
		m := NewManifest(b, prefix, 4)
		if _, err := m.Append(ctx, 2, Entry{Base: v.Base, Next: v.Next, Object: "segments/new"}); err != nil {
			t.Error(err)
		}
	}
	hb.armed = true
	_, err := p.Compact(ctx, compactOptions(t))
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("compaction of a deposed leader: %v, want ErrFenced", err)
	}
	h, _, _ := p.manifest.Load(ctx)
	all, _ := p.manifest.All(ctx, &h)
	if len(all) != 7 || all[0].Compacted || len(h.Retired) != 0 {
		t.Fatalf("manifest after a fenced swap: %d entries, retired %v", len(all), h.Retired)
	}
	rep, err := Verify(ctx, hb.Bucket, false)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	if len(rep.Orphans) != 0 {
		t.Fatalf("the fenced pass left objects behind: %+v", rep.Orphans)
	}
}

// TestCompactRetiresThenJanitorDeletes: replaced objects stay (and are not
// orphans to verify) for the compaction grace, then the janitor deletes
// them and verify finds nothing amiss.
func TestCompactRetiresThenJanitorDeletes(t *testing.T) {
	ctx := context.Background()
	b := objstore.NewMem()
	_, p, _ := tieredLog(t, b, 6)
	if _, err := p.Compact(ctx, compactOptions(t)); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(ctx, b, true)
	if err != nil || len(rep.Problems) != 0 || len(rep.Orphans) != 0 || rep.Retired != 6 {
		// 5 segments and the page that held 4 of them.
		t.Fatalf("verify within the grace: %+v, %v", rep, err)
	}
	if n, err := p.CleanOrphans(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("janitor within the grace deleted %d (%v)", n, err)
	}
	if n, err := p.CleanOrphans(ctx, time.Now().Add(p.t.cfg.CompactionGrace+time.Second)); err != nil || n != 6 {
		t.Fatalf("janitor after the grace deleted %d (%v), want 6", n, err)
	}
	rep, err = Verify(ctx, b, true)
	if err != nil || len(rep.Problems) != 0 || len(rep.Orphans) != 0 || rep.Retired != 0 {
		t.Fatalf("verify after the grace: %+v, %v", rep, err)
	}
	checkCovers(t, p, 60)
}

// TestCompactMergesTransactionIndexes: the rules start with the aborted
// transactions of the replaced segments' indexes, and those they keep are
// found in the compacted object's index.
func TestCompactMergesTransactionIndexes(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	for i := range 5 {
		l.add(10, int64(i))
	}
	l.segs[1].txn = txnindex.Encode([]txnindex.Entry{{ProducerID: 7, FirstOffset: 11, LastOffset: 15, LastStableOffset: 11}})
	l.segs[3].txn = txnindex.Encode([]txnindex.Entry{{ProducerID: 8, FirstOffset: 30, LastOffset: 38, LastStableOffset: 30}})
	tr := newTierer(t, objstore.NewMem())
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tr.UploadOnce(ctx)
	res, err := p.Compact(ctx, compactOptions(t))
	if err != nil || res.ObjectsAfter != 1 {
		t.Fatalf("compaction: %+v, %v", res, err)
	}
	all := checkCovers(t, p, 40)
	if all[0].TxnIndexSize == 0 {
		t.Fatalf("the compacted object has no transaction index: %+v", all[0])
	}
	got, _, err := p.AbortedTransactions(ctx, 0, 40)
	if err != nil || len(got) != 2 || got[0].ProducerID != 7 || got[1].ProducerID != 8 {
		t.Fatalf("aborted transactions after compaction: %+v, %v", got, err)
	}
}

// manifestEntries loads the manifest's head and every entry it lists.
func manifestEntries(t *testing.T, p *Partition) (Head, []Entry) {
	t.Helper()
	ctx := context.Background()
	h, _, err := p.manifest.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := p.manifest.All(ctx, &h)
	if err != nil {
		t.Fatal(err)
	}
	return h, all
}

// fillsAfter is Rules whose map fills at its nth batch.
type fillsAfter struct {
	keepAll
	n int
}

func (f *fillsAfter) Map([]byte) (bool, error) { f.n--; return f.n > 0, nil }

// TestCompactRunEndsWhereTheMapFills: a pass whose map fills in its third
// entry compacts the two before it and leaves the rest as they are; a
// run is also cut before the last stable offset.
func TestCompactRunEndsWhereTheMapFills(t *testing.T) {
	ctx := context.Background()
	_, p, _ := tieredLog(t, objstore.NewMem(), 6)
	o := compactOptions(t)
	o.NewRules = func([]txnindex.Entry) Rules { return &fillsAfter{n: 3} }
	res, err := p.Compact(ctx, o)
	if err != nil || res.ObjectsBefore != 2 {
		t.Fatalf("compaction with a map that fills in the third entry: %+v, %v", res, err)
	}
	all := checkCovers(t, p, 60)
	if len(all) != 5 || !all[0].Compacted || all[0].Next != 20 || all[1].Compacted {
		t.Fatalf("manifest: %+v", all)
	}

	o = compactOptions(t)
	o.LastStable = 45 // an open transaction from 45 on
	if res, err = p.Compact(ctx, o); err != nil || res.ObjectsBefore != 3 {
		t.Fatalf("compaction below the last stable offset: %+v, %v (want the entries up to 40)", res, err)
	}
	if all = checkCovers(t, p, 60); all[0].Next != 40 || all[1].Compacted {
		t.Fatalf("manifest: %+v", all)
	}
}

// TestCompactRatioAndMaxLag: a run whose dirty share is under
// min.cleanable.dirty.ratio waits, unless a dirty record is past
// max.compaction.lag.ms.
func TestCompactRatioAndMaxLag(t *testing.T) {
	ctx := context.Background()
	_, p, l := tieredLog(t, objstore.NewMem(), 6)
	if _, err := p.Compact(ctx, compactOptions(t)); err != nil {
		t.Fatal(err)
	}
	l.add(10, time.Now().UnixMilli()) // one more dirty entry behind the compacted one
	p.t.UploadOnce(ctx)
	o := compactOptions(t)
	o.MinCleanableDirtyRatio = 0.99
	if res, err := p.Compact(ctx, o); err != nil || res.ObjectsBefore != 0 {
		t.Fatalf("a pass under the dirty ratio: %+v, %v", res, err)
	}
	o.MaxCompactionLagMs = 1
	o.Now = time.Now().Add(time.Second)
	if res, err := p.Compact(ctx, o); err != nil || res.ObjectsBefore != 2 {
		t.Fatalf("a pass past max.compaction.lag.ms: %+v, %v, want the compacted entry and the dirty one", res, err)
	}
	checkCovers(t, p, 70)
}

// dropRange is Rules that drops the batches starting in [from, to).
type dropRange struct {
	keepAll
	from, to int64
}

func (d *dropRange) Filter(raw []byte, _ int64, _ bool) ([]byte, int64, error) {
	if base := batchLast(raw) - int64(int32(binary.BigEndian.Uint32(raw[lastDeltaOffset:]))); base >= d.from && base < d.to {
		return nil, 1, nil
	}
	return raw, 0, nil
}

// TestRemoteReadSkipsCompactedGap: a read at an offset compaction removed
// returns the next batch above it, also when that batch is in the next
// object, as a read in a gap of the local log does.
func TestRemoteReadSkipsCompactedGap(t *testing.T) {
	ctx := context.Background()
	_, p, _ := tieredLog(t, objstore.NewMem(), 6)
	o := compactOptions(t)
	o.SegmentBytes = batchHeaderSize // a batch an object: the first, [0, 30), holds only [0, 10)
	o.NewRules = func([]txnindex.Entry) Rules { return &dropRange{from: 10, to: 30} }
	if _, err := p.Compact(ctx, o); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{10, 15, 29} {
		b, err := p.Read(ctx, off, 1<<20, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("read at %d in the gap: %d bytes, %v", off, len(b), err)
		}
		if base := int64(binary.BigEndian.Uint64(b)); base != 30 {
			t.Fatalf("read at %d in the gap returned the batch at %d, want 30", off, base)
		}
	}
}

// TestCompactFailedPutLeavesManifestAndNoObjects: a PUT that fails in the
// middle of a pass leaves the manifest as it was and no object behind.
func TestCompactFailedPutLeavesManifestAndNoObjects(t *testing.T) {
	ctx := context.Background()
	fb := objstore.NewFaulty(objstore.NewMem())
	_, p, _ := tieredLog(t, fb, 6)
	before, _, _ := p.manifest.Load(ctx)
	o := compactOptions(t)
	o.SegmentBytes = batchHeaderSize // five objects: the failure comes after some are in
	fb.FailNext(objstore.OpPut, 8, nil)
	if _, err := p.Compact(ctx, o); !errors.Is(err, objstore.ErrInjected) {
		t.Fatalf("compaction with a failing PUT: %v", err)
	}
	after, _, _ := p.manifest.Load(ctx)
	if after.Revision != before.Revision {
		t.Fatalf("the manifest changed: revision %d -> %d", before.Revision, after.Revision)
	}
	rep, err := Verify(ctx, fb, true)
	if err != nil || len(rep.Problems) != 0 || len(rep.Orphans) != 0 {
		t.Fatalf("bucket after a failed pass: %+v, %v", rep, err)
	}
	checkCovers(t, p, 60)
}
