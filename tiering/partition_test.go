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
