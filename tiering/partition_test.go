package tiering

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// fakeLog is a partition log of sealed segments held in memory: each
// segment is one batch of (next - base) records whose header carries the
// offsets and a max timestamp.
type fakeLog struct {
	segs      []fakeSeg
	start     int64
	end       int64
	remoteEnd int64
}

type fakeSeg struct {
	Segment
	data []byte
	txn  []byte // its transaction index, if any
}

// batch is a record-batch v2 header (61 bytes) and no records: enough for
// the remote reader, which reads only headers and bytes.
func batch(base, next, maxTs int64) []byte {
	b := make([]byte, batchHeaderSize)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[batchLengthOffset:], uint32(batchHeaderSize-12))
	binary.BigEndian.PutUint32(b[lastDeltaOffset:], uint32(next-base-1))
	binary.BigEndian.PutUint64(b[maxTimestampAt:], uint64(maxTs))
	return b
}

func (l *fakeLog) add(n int64, maxTs int64) {
	base := l.end
	data := batch(base, base+n, maxTs)
	l.segs = append(l.segs, fakeSeg{Segment{Base: base, Next: base + n, Size: int64(len(data)), MaxTimestamp: maxTs}, data, nil})
	l.end += n
}

// SealedSegments lists all but the last segment, which is the active one.
func (l *fakeLog) SealedSegments(from int64) []Segment {
	var out []Segment
	for _, s := range l.segs[:max(len(l.segs)-1, 0)] {
		if s.Next > from && s.Base >= l.start {
			out = append(out, s.Segment)
		}
	}
	return out
}

func (l *fakeLog) OpenSealed(base int64) (*SegmentView, error) {
	for _, s := range l.segs {
		if s.Base == base {
			return &SegmentView{Segment: s.Segment, Log: bytes.NewReader(s.data), TxnIndex: s.txn, Release: func() {}}, nil
		}
	}
	return nil, fmt.Errorf("no segment %d", base)
}

func (l *fakeLog) SetRemoteEnd(end int64) { l.remoteEnd = max(l.remoteEnd, end) }
func (l *fakeLog) RestartAt(offset int64, _ []byte) error {
	if l.start != l.end {
		return fmt.Errorf("not empty")
	}
	l.start, l.end = offset, offset
	return nil
}
func (l *fakeLog) LogStartOffset() int64 { return l.start }
func (l *fakeLog) LogEndOffset() int64   { return l.end }
func (l *fakeLog) Size() int64 {
	var n int64
	for _, s := range l.segs {
		if s.Base >= l.start {
			n += s.Size
		}
	}
	return n
}
func (l *fakeLog) DeleteRecordsBefore(offset int64) error {
	l.start = max(l.start, offset)
	return nil
}

type fakeSource struct{ l *fakeLog }

func (s fakeSource) Topic() string        { return "t" }
func (s fakeSource) TopicID() [16]byte    { return [16]byte{7} }
func (s fakeSource) Index() int32         { return 0 }
func (s fakeSource) Log() Log             { return s.l }
func (s fakeSource) LeaderEpoch() int32   { return 1 }
func (s fakeSource) HighWatermark() int64 { return s.l.end }
func (s fakeSource) Leading() bool        { return true }

func newTierer(t *testing.T, b objstore.Bucket) *Tierer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ChunkBytes, cfg.CacheBytes, cfg.PageSize = 64, 1<<20, 4
	tr, err := New(b, cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

const prefix = "topics/07000000000000000000000000000000/0/"

// TestRetentionAgesSegmentsWithoutTimestamps: a segment whose records
// carry no timestamp is aged from its upload, not treated as from 1970.
func TestRetentionAgesSegmentsWithoutTimestamps(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	l.add(10, -1)
	l.add(10, -1)
	l.add(1, -1) // the "active" one stays local
	tr := newTierer(t, objstore.NewMem())
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tr.UploadOnce(ctx)
	if n, err := p.ApplyRetention(ctx, time.Now(), int64(7*24*time.Hour/time.Millisecond), -1); err != nil || n != 0 {
		t.Fatalf("fresh segments without timestamps: %d dropped (%v)", n, err)
	}
	if n, _ := p.ApplyRetention(ctx, time.Now().Add(8*24*time.Hour), int64(7*24*time.Hour/time.Millisecond), -1); n == 0 {
		t.Fatal("segments uploaded 8 days ago were kept under a 7-day retention")
	}
}

// TestRestoreAfterEveryEntryExpired: a new disk under a manifest that
// retention emptied continues at its start, not at offset 0.
func TestRestoreAfterEveryEntryExpired(t *testing.T) {
	ctx := context.Background()
	b := objstore.NewMem()
	l := &fakeLog{}
	l.add(10, 1)
	l.add(10, 2)
	l.add(1, 3)
	tr := newTierer(t, b)
	p, _ := tr.Open(ctx, fakeSource{l}, prefix)
	tr.UploadOnce(ctx)
	if err := p.DeleteRecords(ctx, 20); err != nil {
		t.Fatal(err)
	}
	fresh := &fakeLog{}
	if _, err := newTierer(t, b).Open(ctx, fakeSource{fresh}, prefix); err != nil {
		t.Fatal(err)
	}
	if fresh.start != 20 || fresh.end != 20 {
		t.Fatalf("new disk starts at [%d, %d), want 20", fresh.start, fresh.end)
	}
}

// TestDeleteRecordsIsNotUndoneByUpload: DeleteRecords before anything is
// uploaded still holds after the segment holding the offset is uploaded.
func TestDeleteRecordsIsNotUndoneByUpload(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	l.add(100, 1)
	l.add(1, 2)
	tr := newTierer(t, objstore.NewMem())
	p, _ := tr.Open(ctx, fakeSource{l}, prefix)
	if err := p.DeleteRecords(ctx, 60); err != nil {
		t.Fatal(err)
	}
	l.start = 0 // the local segment still holds [0, 100): the log deletes whole segments only
	tr.UploadOnce(ctx)
	if p.Start() != 60 || p.Empty() {
		t.Fatalf("after upload the bucket starts at %d (empty %v), want 60", p.Start(), p.Empty())
	}
}

// TestOrphanJanitorSparesUploadsInFlight: objects past the manifest's end
// (an upload whose .log is still going) are kept however old; unnamed
// objects below it are deleted.
func TestOrphanJanitorSparesUploadsInFlight(t *testing.T) {
	ctx := context.Background()
	b := objstore.NewMem()
	l := &fakeLog{}
	l.add(10, 1)
	l.add(1, 2)
	tr := newTierer(t, b)
	p, _ := tr.Open(ctx, fakeSource{l}, prefix)
	tr.UploadOnce(ctx)
	b.Put(ctx, prefix+"segments/00000000000000000000-1-dead.log", []byte("x"), objstore.PutOptions{})   // cut short, below the end
	b.Put(ctx, prefix+"segments/00000000000000000010-1-busy.index", []byte("x"), objstore.PutOptions{}) // in flight
	n, err := p.CleanOrphans(ctx, time.Now().Add(2*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("deleted %d (%v), want the one below the end", n, err)
	}
	if _, err := b.Stat(ctx, prefix+"segments/00000000000000000010-1-busy.index"); err != nil {
		t.Errorf("the in-flight upload's object was deleted: %v", err)
	}
}

// TestPartialPageAccounting: once the start cuts into a page, the entries
// below it are deleted from the store and no longer counted.
func TestPartialPageAccounting(t *testing.T) {
	ctx := context.Background()
	b := objstore.NewMem()
	l := &fakeLog{}
	for range 9 {
		l.add(10, 1)
	}
	l.add(1, 2)
	tr := newTierer(t, b)
	p, _ := tr.Open(ctx, fakeSource{l}, prefix)
	tr.UploadOnce(ctx) // 9 segments: two pages of 4 and one in the tail
	h := p.head()
	if len(h.Pages) != 2 || h.Segments() != 9 {
		t.Fatalf("%d pages, %d segments", len(h.Pages), h.Segments())
	}
	if err := p.DeleteRecords(ctx, 25); err != nil {
		t.Fatal(err)
	}
	h = p.head()
	if h.Segments() != 7 || h.Bytes() != 7*batchHeaderSize {
		t.Errorf("after cutting into the first page: %d segments, %d bytes; want 7 and %d", h.Segments(), h.Bytes(), 7*batchHeaderSize)
	}
	rep, err := Verify(ctx, b, true)
	if err != nil || len(rep.Problems) > 0 || rep.Segments != 7 {
		t.Errorf("verify: %+v, %v", rep, err)
	}
	var left int
	b.List(ctx, prefix+"segments/", func(string, objstore.Attributes) error { left++; return nil })
	if left != 7*3 {
		t.Errorf("%d segment objects left in the store, want %d (7 segments x .log, .index, .timeindex)", left, 7*3)
	}
}

// TestReadPrefetchesTheNextSegment: a read that ends at a segment's end
// gets the next two segments' first chunks loaded in the background, so
// that the reader's next read, in the next segment, costs no GET of its
// own.
func TestReadPrefetchesTheNextSegment(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	for range 3 {
		l.add(10, -1)
	}
	l.add(1, -1) // the "active" one stays local
	b := objstore.NewFaulty(objstore.NewMem())
	tr := newTierer(t, b)
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tr.UploadOnce(ctx)
	if _, err := p.Read(ctx, 0, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	// Segment 0's chunk, then segments 1 and 2's, prefetched. Every
	// prefetch holds a load slot once Read returns.
	testwait.Until(t, 10*time.Second, func() bool { return tr.chunks.Loading() == 0 }, "the prefetches to end")
	if n := b.Calls(objstore.OpGetRange); n != 3 {
		t.Fatalf("%d ranged GETs after reading the first segment, want 3 (its chunk and the next two segments' first)", n)
	}
	if _, err := p.Read(ctx, 10, 1<<20, true); err != nil {
		t.Fatal(err)
	}
	// Segment 1's chunk came from the prefetch, and segment 2's is
	// loaded already: no GET at all, now or from a prefetch this read
	// started.
	testwait.Until(t, 10*time.Second, func() bool { return tr.chunks.Loading() == 0 }, "the prefetches to end")
	if n := b.Calls(objstore.OpGetRange); n != 3 {
		t.Fatalf("%d ranged GETs after reading two of three segments, want 3 (all from the read-ahead)", n)
	}
}

// TestConcurrentUploadRoundsUploadEachSegmentOnce: a drain's upload runs
// beside the periodic one; with slow PUTs both see the same pending
// segment, and without a per-partition upload lock the second wrote a
// duplicate object and failed its manifest append as not contiguous.
func TestConcurrentUploadRoundsUploadEachSegmentOnce(t *testing.T) {
	ctx := context.Background()
	mem := objstore.NewMem()
	b := objstore.NewFaulty(mem)
	b.SetLatency(objstore.OpPut, 20*time.Millisecond)
	l := &fakeLog{}
	l.add(10, 1)
	l.add(10, 2)
	l.add(1, 3) // the "active" one stays local
	tr := newTierer(t, b)
	if _, err := tr.Open(ctx, fakeSource{l}, prefix); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { tr.UploadOnce(ctx) })
	}
	wg.Wait()
	if s := tr.Statuses()[0]; s.LastError != "" || s.RemoteSegments != 2 {
		t.Fatalf("after two rounds at once: %d segments in the manifest, last error %q", s.RemoteSegments, s.LastError)
	}
	logs := 0
	err := mem.List(ctx, prefix+"segments/", func(key string, _ objstore.Attributes) error {
		if strings.HasSuffix(key, ".log") {
			logs++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if logs != 2 {
		t.Fatalf("%d segment .log objects in the bucket, want 2 (one upload each)", logs)
	}
}

// TestDeleteRecordsDuringAnUpload: a DeleteRecords that passes a segment
// while it uploads empties the manifest; the upload, finishing after, must
// not add it below the new start (the manifest would end below its start
// and every later upload stop at the hole), but drop it and go on.
func TestDeleteRecordsDuringAnUpload(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	for range 5 {
		l.add(100, 1)
	}
	b := &hookBucket{Bucket: objstore.NewMem()}
	tr := newTierer(t, b)
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.manifest.Append(ctx, 1, Entry{Base: 0, Next: 100, Object: "segments/first"}); err != nil {
		t.Fatal(err)
	}
	p.setHead(mustLoad(t, p))
	b.hook = func() { // the upload of [100, 200) is under way
		if err := p.DeleteRecords(ctx, 350); err != nil {
			t.Error(err)
		}
	}
	b.armed = true
	for range 3 {
		if _, err := tr.uploadPending(ctx, p); err != nil {
			t.Fatalf("upload after a DeleteRecords: %v", err)
		}
	}
	h := mustLoad(t, p)
	if h.StartOffset != 350 || h.Next() != 400 {
		t.Fatalf("the manifest holds [%d, %d), want [350, 400)", h.StartOffset, h.Next())
	}
	n := 0
	b.List(ctx, prefix+"segments/", func(string, objstore.Attributes) error { n++; return nil })
	if n != 3 { // [300, 400)'s .log and indexes
		t.Errorf("%d segment objects in the bucket, want the 3 of the one segment kept", n)
	}
}

func mustLoad(t *testing.T, p *Partition) Head {
	t.Helper()
	h, _, err := p.manifest.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRetentionPassesEmptiedEntries: an entry with no bytes (a segment
// the cleaner emptied, uploaded to keep the manifest whole) has no
// timestamp and a fresh upload time; time retention must go on past it to
// the old entries after it.
func TestRetentionPassesEmptiedEntries(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	l.add(100, 1)
	l.segs = append(l.segs, fakeSeg{Segment: Segment{Base: 100, Next: 150, MaxTimestamp: -1}})
	l.end = 150
	l.add(100, 1)
	l.add(1, time.Now().UnixMilli()) // the active one
	tr := newTierer(t, objstore.NewMem())
	p, err := tr.Open(ctx, fakeSource{l}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	tr.UploadOnce(ctx)
	if p.Next() != 250 {
		t.Fatalf("uploaded up to %d, want 250", p.Next())
	}
	if n, err := p.ApplyRetention(ctx, time.Now(), int64(time.Hour/time.Millisecond), -1); err != nil || n != 3 || p.Start() != 250 {
		t.Fatalf("retention dropped %d entries (%v), start %d; want 3 and 250", n, err, p.Start())
	}
}

// mergingLog is a fakeLog whose cleaner merges the first segment with the
// one after it between the uploader's listing and its opening.
type mergingLog struct{ *fakeLog }

func (l mergingLog) OpenSealed(base int64) (*SegmentView, error) {
	v, err := l.fakeLog.OpenSealed(base)
	if err == nil && base == 0 {
		v.Next = l.segs[2].Base
	}
	return v, err
}

// TestUploadStopsAtTheHighWatermarkAfterAMerge: a segment that reaches
// past the high watermark once opened (the cleaner merged it since it
// was listed) is not uploaded: the bucket holds only committed records.
func TestUploadStopsAtTheHighWatermarkAfterAMerge(t *testing.T) {
	ctx := context.Background()
	l := &fakeLog{}
	for range 3 {
		l.add(10, 1)
	}
	tr := newTierer(t, objstore.NewMem())
	src := hwSource{fakeSource{l}, 10}
	p, err := tr.Open(ctx, src, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.uploadPending(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !p.Empty() {
		t.Fatalf("the bucket holds [%d, %d) with the high watermark at 10", p.Start(), p.Next())
	}
}

// hwSource is a source of a mergingLog whose high watermark is hw.
type hwSource struct {
	fakeSource
	hw int64
}

func (s hwSource) HighWatermark() int64 { return s.hw }
func (s hwSource) Log() Log             { return mergingLog{s.l} }

// TestRefreshReadsAStaleHead: Refresh picks up what another writer (the
// leader) appended since this replica last read the manifest, and reads
// it again only when the last read started before the time it is given.
func TestRefreshReadsAStaleHead(t *testing.T) {
	ctx := context.Background()
	b := objstore.NewMem()
	p, err := newTierer(t, b).Open(ctx, fakeSource{&fakeLog{}}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	leader := NewManifest(b, prefix, DefaultPageSize)
	if _, err := leader.Append(ctx, 1, Entry{Base: 0, Next: 100, Object: "segments/a"}); err != nil {
		t.Fatal(err)
	}
	if p.Next() != 0 {
		t.Fatalf("the bucket's end is %d before any re-read", p.Next())
	}
	if err := p.Refresh(ctx, time.Now()); err != nil || p.Next() != 100 {
		t.Fatalf("after Refresh the bucket's end is %d (%v), want 100", p.Next(), err)
	}
	if _, err := leader.Append(ctx, 1, Entry{Base: 100, Next: 200, Object: "segments/b"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Refresh(ctx, time.Now().Add(-time.Second)); err != nil || p.Next() != 100 {
		t.Fatalf("a Refresh that a read under a second old satisfies re-read the manifest (end %d, %v)", p.Next(), err)
	}
	if err := p.Refresh(ctx, time.Now()); err != nil || p.Next() != 200 {
		t.Fatalf("a Refresh that needs a newer read left the end at %d (%v), want 200", p.Next(), err)
	}
}
