package tiering

// The uploader: the leader of a partition uploads each sealed segment that
// lies wholly below the high watermark, in offset order, as four objects
// (the batches, the two indexes, the producer snapshot), then appends it to
// the manifest by CAS. Only then may local retention delete the segment
// (log.SetRemoteEnd). A crash between the PUTs and the manifest write
// leaves unreferenced objects, which the orphan janitor removes; the next
// attempt writes objects under new names, so nothing is ever overwritten.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Object suffixes of an uploaded segment.
const (
	suffixLog       = ".log"
	suffixIndex     = ".index"
	suffixTimeIndex = ".timeindex"
	suffixSnapshot  = ".snap"
	suffixTxnIndex  = ".txnindex"
)

// suffixes are the objects an entry has: the four of every segment, the
// snapshot and the transaction index when it has them.
func (e Entry) suffixes() []string {
	s := []string{suffixLog, suffixIndex, suffixTimeIndex}
	if e.Snapshot {
		s = append(s, suffixSnapshot)
	}
	if e.TxnIndexSize > 0 {
		s = append(s, suffixTxnIndex)
	}
	return s
}

// uploadPending uploads every sealed segment of p that is ready, oldest
// first, and returns the bytes uploaded. It stops at the first failure.
func (t *Tierer) uploadPending(ctx context.Context, p *Partition) (int64, error) {
	p.uploading.Lock()
	defer p.uploading.Unlock()
	head, err := p.currentHead(ctx)
	if err != nil {
		return 0, err
	}
	var uploaded int64
	for _, seg := range p.src.Log().SealedSegments(head.Next()) {
		if seg.Next > p.src.HighWatermark() {
			break // not yet committed everywhere it must be
		}
		if seg.Next <= head.StartOffset {
			continue // a DeleteRecords passed it during this round
		}
		if !head.Empty() && seg.Base > head.Next() {
			// Segments are listed end to end, each up to the next one's
			// base, and local retention keeps each until the bucket holds
			// it whole; DeleteRecords moves the manifest's start first
			// (and an upload it overtook is dropped: ErrBelowStart). So a
			// hole here means records the bucket never got are gone from
			// the local log. Moving the bucket's start up to seg.Base
			// would drop what it holds, and an entry cannot start past the
			// end: uploads stop, with this error in the tiering status.
			return uploaded, fmt.Errorf("tiering: %s: the local log has nothing for offsets [%d, %d) above the bucket's end; uploads wait", p.name(), head.Next(), seg.Base)
		}
		// A segment starting below the manifest end (this replica rolled at
		// other offsets than the leader before it) is uploaded whole; the
		// manifest takes the overlap (Manifest.Append).
		if err := t.pace(ctx, seg.Size); err != nil {
			return uploaded, err
		}
		if head, err = t.uploadSegment(ctx, p, seg.Base); errors.Is(err, errNotCommitted) {
			break
		} else if err != nil {
			return uploaded, err
		}
		if seg.Next > head.StartOffset {
			uploaded += seg.Size
		}
	}
	return uploaded, nil
}

// errNotCommitted: the segment now reaches past the high watermark.
var errNotCommitted = errors.New("tiering: segment not yet committed")

// uploadSegment writes one segment's objects and appends it to the
// manifest.
func (t *Tierer) uploadSegment(ctx context.Context, p *Partition, base int64) (Head, error) {
	began := time.Now()
	v, err := p.src.Log().OpenSealed(base)
	if err != nil {
		return Head{}, err
	}
	defer v.Release()
	if v.Next > p.src.HighWatermark() {
		// The cleaner merged it with later segments since it was listed.
		return Head{}, errNotCommitted
	}
	epoch := p.src.LeaderEpoch()
	var id [8]byte
	rand.Read(id[:])
	object := fmt.Sprintf("segments/%020d-%d-%s", v.Base, max(v.LeaderEpoch, 0), hex.EncodeToString(id[:]))
	sum, err := checksum(v.Log, v.Size)
	if err != nil {
		return Head{}, fmt.Errorf("tiering: %s: read segment %d: %w", p.name(), base, err)
	}
	key := p.prefix + object
	small := []struct {
		suffix string
		data   []byte
	}{{suffixIndex, v.OffsetIndex}, {suffixTimeIndex, v.TimeIndex}}
	if v.ProducerSnapshot != nil {
		small = append(small, struct {
			suffix string
			data   []byte
		}{suffixSnapshot, v.ProducerSnapshot})
	}
	if len(v.TxnIndex) > 0 {
		small = append(small, struct {
			suffix string
			data   []byte
		}{suffixTxnIndex, v.TxnIndex})
	}
	for _, o := range small {
		if _, err := p.bucket.Put(ctx, key+o.suffix, o.data, objstore.PutOptions{IfAbsent: true}); err != nil {
			return Head{}, fmt.Errorf("tiering: %s: upload %s: %w", p.name(), key+o.suffix, err)
		}
	}
	if _, err := p.bucket.PutReader(ctx, key+suffixLog, v.Log, v.Size, objstore.PutOptions{IfAbsent: true}); err != nil {
		return Head{}, fmt.Errorf("tiering: %s: upload %s: %w", p.name(), key+suffixLog, err)
	}
	e := Entry{Base: v.Base, Next: v.Next, Size: v.Size, MaxTimestamp: v.MaxTimestamp, LeaderEpoch: v.LeaderEpoch,
		Object: object, CRC32C: sum, IndexSize: int64(len(v.OffsetIndex)), TimeSize: int64(len(v.TimeIndex)),
		TxnIndexSize: int64(len(v.TxnIndex)), Snapshot: v.ProducerSnapshot != nil, UploadedMs: time.Now().UnixMilli()}
	head, err := p.manifest.Append(ctx, epoch, e)
	if errors.Is(err, ErrBelowStart) {
		// A DeleteRecords moved the start past the segment while it
		// uploaded: its records are gone, and so go its objects.
		t.deleteObjects(ctx, p, []Entry{e}, nil)
		t.logger.Info("segment deleted by DeleteRecords during its upload", "partition", p.name(), "base", v.Base, "next", v.Next)
		h, _, err := p.manifest.Load(ctx)
		if err != nil {
			return Head{}, err
		}
		p.setHead(h)
		return h, nil
	}
	if err != nil {
		return Head{}, fmt.Errorf("tiering: %s: add segment %d to the manifest: %w", p.name(), base, err)
	}
	p.setHead(head)
	t.metrics.uploaded(p.src.Topic(), v.Size, time.Since(began))
	t.logger.Debug("segment uploaded", "partition", p.name(), "base", v.Base, "next", v.Next, "bytes", v.Size, "object", object, "took", time.Since(began))
	return head, nil
}

// checksum is the CRC-32C of size bytes of r.
func checksum(r io.ReaderAt, size int64) (uint32, error) {
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(r, 0, size)); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// pace holds an upload of n bytes back so that uploads stay within the
// configured rate (a simple pacer: each upload reserves its share of time).
func (t *Tierer) pace(ctx context.Context, n int64) error {
	if t.cfg.UploadRate <= 0 {
		return nil
	}
	t.paceMu.Lock()
	now := time.Now()
	start := t.paceNext
	if start.Before(now) {
		start = now
	}
	t.paceNext = start.Add(time.Duration(float64(n) / float64(t.cfg.UploadRate) * float64(time.Second)))
	t.paceMu.Unlock()
	if wait := start.Sub(now); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// uploadLag is what is not yet in the bucket: bytes and segments sealed
// but not uploaded, and for how long some have been waiting (measured from
// when the uploader first saw one pending).
func (p *Partition) uploadLag(now time.Time) (bytes int64, segments int, age time.Duration) {
	head := p.head()
	for _, s := range p.src.Log().SealedSegments(head.Next()) {
		bytes += s.Size
		segments++
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if segments == 0 {
		p.pendingSince = time.Time{}
		return 0, 0, 0
	}
	if p.pendingSince.IsZero() {
		p.pendingSince = now
	}
	return bytes, segments, now.Sub(p.pendingSince)
}
