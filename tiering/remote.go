package tiering

// Remote reads: an offset below the local log is found in the manifest,
// its position in the segment's uploaded offset index, and its bytes in
// fixed-size chunks of the .log object, each fetched by one ranged GET
// through the cache (docs/design.md §7). A reader moving through a segment gets
// the next chunk prefetched.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/strata-streaming/strata/cache"
)

// ErrNotInBucket: the offset is not held by any uploaded segment above the
// remote start.
var ErrNotInBucket = errors.New("tiering: offset is not in the bucket")

// Record batch v2 header fields used here (Kafka's layout).
const (
	batchHeaderSize   = 61
	batchLengthOffset = 8  // int32, bytes after the first 12
	lastDeltaOffset   = 23 // int32
	maxTimestampAt    = 35 // int64
)

func newChunkCache(maxBytes, chunkBytes int64, m *Metrics) (*cache.Cache, error) {
	return cache.New(maxBytes, cache.Options{ItemBytes: chunkBytes, OnHit: func() { m.cache(true) }, OnMiss: func() { m.cache(false) }})
}

// Start is the partition's first offset in the bucket and Next the offset
// after its last uploaded record; Start == Next when nothing is uploaded.
func (p *Partition) Start() int64 { h := p.head(); return h.StartOffset }

// Next is the offset after the last uploaded segment.
func (p *Partition) Next() int64 { h := p.head(); return h.Next() }

// Empty reports whether no segment is uploaded.
func (p *Partition) Empty() bool { h := p.head(); return h.Empty() }

// Read returns whole batches from offset out of the bucket: at most
// maxBytes, but at least the first batch when minOne, and never past the
// end of the segment that holds offset (the next read continues in the
// next segment, or locally). An offset in a gap that compaction left at a
// segment's end is read from the next segment, so that, as in the local
// log, a read returns the first batch at or above the offset.
func (p *Partition) Read(ctx context.Context, offset int64, maxBytes int, minOne bool) ([]byte, error) {
	h := p.head()
	for {
		e, ok, err := p.manifest.Find(ctx, &h, offset)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s offset %d (bucket holds [%d, %d))", ErrNotInBucket, p.name(), offset, h.StartOffset, h.Next())
		}
		out, found, err := p.readEntry(ctx, &h, e, offset, maxBytes, minOne)
		if err != nil || found || e.Next >= h.Next() {
			return out, err
		}
		offset = e.Next
	}
}

// readEntry is Read within the segment e; found is false when no batch
// of e reaches offset.
func (p *Partition) readEntry(ctx context.Context, h *Head, e Entry, offset int64, maxBytes int, minOne bool) (out []byte, found bool, err error) {
	pos, err := p.positionOf(ctx, e, offset)
	if err != nil {
		return nil, false, err
	}
	// Find the whole batches to return from their headers, then copy them
	// out of the chunks at once: one buffer of the exact size, not one per
	// batch appended to a growing one.
	start := pos
	for pos < e.Size {
		size, last, _, err := p.batchAt(ctx, e, pos)
		if err != nil {
			return nil, false, err
		}
		if last < offset {
			pos += size
			start = pos
			continue
		}
		found = true
		if pos-start+size > int64(maxBytes) && !(minOne && pos == start) {
			break
		}
		pos += size
		if pos-start >= int64(maxBytes) {
			break
		}
	}
	if pos > start {
		if out, err = p.readAt(ctx, e, start, pos-start); err != nil {
			return nil, false, err
		}
	}
	p.prefetch(ctx, h, e, pos)
	return out, found, nil
}

// FindByTime returns the first batch in the bucket whose newest record is
// at or after ts; nil when the bucket has none.
func (p *Partition) FindByTime(ctx context.Context, ts int64) ([]byte, error) {
	h := p.head()
	e, ok, err := p.manifest.FindByTime(ctx, &h, ts)
	if err != nil || !ok {
		return nil, err
	}
	from := e.Base
	if e.Base < h.StartOffset {
		from = h.StartOffset
	}
	// The time index says after which batch the timestamps first reach
	// ts; the scan starts there instead of at the segment's start.
	after, err := p.timeFloor(ctx, e, ts)
	if err != nil {
		return nil, err
	}
	pos, err := p.positionOf(ctx, e, max(from, after))
	if err != nil {
		return nil, err
	}
	for pos < e.Size {
		size, last, maxTs, err := p.batchAt(ctx, e, pos)
		if err != nil {
			return nil, err
		}
		if maxTs >= ts && last >= h.StartOffset {
			return p.readAt(ctx, e, pos, size)
		}
		pos += size
	}
	return nil, nil
}

// batchAt reads the header of the batch at pos: its size, last offset and
// newest timestamp.
func (p *Partition) batchAt(ctx context.Context, e Entry, pos int64) (size, last, maxTs int64, err error) {
	hdr, err := p.readAt(ctx, e, pos, batchHeaderSize)
	if err != nil {
		return 0, 0, 0, err
	}
	size = 12 + int64(int32(binary.BigEndian.Uint32(hdr[batchLengthOffset:])))
	if size < batchHeaderSize || pos+size > e.Size {
		return 0, 0, 0, fmt.Errorf("tiering: %s: segment %s has a bad batch at position %d", p.name(), e.Object, pos)
	}
	last = int64(binary.BigEndian.Uint64(hdr)) + int64(int32(binary.BigEndian.Uint32(hdr[lastDeltaOffset:])))
	return size, last, int64(binary.BigEndian.Uint64(hdr[maxTimestampAt:])), nil
}

// timeFloor returns an offset at or before the first batch of e whose
// newest timestamp is at or after ts, from the uploaded time index: an
// entry (T, r) says every batch up to r is older than T.
func (p *Partition) timeFloor(ctx context.Context, e Entry, ts int64) (int64, error) {
	if e.TimeSize == 0 {
		return e.Base, nil
	}
	key := p.prefix + e.Object + suffixTimeIndex
	idx, err := p.t.chunks.Get(ctx, key, func(ctx context.Context) ([]byte, error) { return p.getAll(ctx, key, e.TimeSize) })
	if err != nil {
		return 0, fmt.Errorf("tiering: %s: read time index of %s: %w", p.name(), e.Object, err)
	}
	const entry = 12
	i := sort.Search(len(idx)/entry, func(i int) bool { return int64(binary.BigEndian.Uint64(idx[i*entry:])) >= ts })
	if i == 0 {
		return e.Base, nil
	}
	return e.Base + int64(binary.BigEndian.Uint32(idx[(i-1)*entry+8:])) + 1, nil
}

// positionOf finds, with the segment's offset index, the position of the
// last indexed batch at or before offset.
func (p *Partition) positionOf(ctx context.Context, e Entry, offset int64) (int64, error) {
	if e.IndexSize == 0 {
		return 0, nil
	}
	idx, err := p.t.chunks.Get(ctx, p.prefix+e.Object+suffixIndex, func(ctx context.Context) ([]byte, error) {
		return p.getAll(ctx, p.prefix+e.Object+suffixIndex, e.IndexSize)
	})
	if err != nil {
		return 0, fmt.Errorf("tiering: %s: read index of %s: %w", p.name(), e.Object, err)
	}
	rel := uint32(offset - e.Base)
	n := len(idx) / 8
	i := sort.Search(n, func(i int) bool { return binary.BigEndian.Uint32(idx[i*8:]) > rel })
	if i == 0 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint32(idx[(i-1)*8+4:])), nil
}

// readAt returns n bytes of the segment's .log object from pos, through
// the chunk cache.
func (p *Partition) readAt(ctx context.Context, e Entry, pos, n int64) ([]byte, error) {
	chunk := p.t.cfg.ChunkBytes
	out := make([]byte, 0, n)
	for n > 0 {
		i := pos / chunk
		b, err := p.chunk(ctx, e, i)
		if err != nil {
			return nil, err
		}
		from := pos - i*chunk
		take := min(n, int64(len(b))-from)
		if take <= 0 {
			return nil, fmt.Errorf("tiering: %s: %s ends before position %d", p.name(), e.Object, pos)
		}
		out = append(out, b[from:from+take]...)
		pos += take
		n -= take
	}
	return out, nil
}

// chunk returns chunk i of the segment's .log object.
func (p *Partition) chunk(ctx context.Context, e Entry, i int64) ([]byte, error) {
	key := p.prefix + e.Object + suffixLog
	return p.t.chunks.Get(ctx, key+"#"+strconv.FormatInt(i, 10), p.chunkLoader(key, e.Size, i))
}

func (p *Partition) chunkLoader(key string, size, i int64) cache.Loader {
	chunk := p.t.cfg.ChunkBytes
	return func(ctx context.Context) ([]byte, error) {
		from := i * chunk
		n := min(chunk, size-from)
		r, err := p.bucket.GetRange(ctx, key, from, n)
		if err != nil {
			return nil, fmt.Errorf("tiering: read %s at %d: %w", key, from, err)
		}
		defer r.Close()
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("tiering: read %s at %d: %w (the store sent a short body)", key, from, err)
		}
		p.t.metrics.remoteReadBytes.Add(float64(n))
		return b, nil
	}
}

// prefetch loads the chunk at pos and the one after it. A reader within a
// chunk of its segment's end gets the next segments' offset indexes and
// first chunks loaded instead (segmentsAhead of them), so that crossing
// into them does not wait for two GETs in a row.
func (p *Partition) prefetch(ctx context.Context, h *Head, e Entry, pos int64) {
	chunk := p.t.cfg.ChunkBytes
	key := p.prefix + e.Object + suffixLog
	if pos < e.Size {
		i := pos / chunk
		p.t.chunks.Prefetch(key+"#"+strconv.FormatInt(i, 10), p.chunkLoader(key, e.Size, i))
		if next := i + 1; next*chunk < e.Size {
			p.t.chunks.Prefetch(key+"#"+strconv.FormatInt(next, 10), p.chunkLoader(key, e.Size, next))
			return
		}
	}
	for range segmentsAhead {
		next, ok, err := p.manifest.Find(ctx, h, e.Next)
		if err != nil || !ok {
			return // the end of the bucket, or a page read failed: the read will say
		}
		if next.IndexSize > 0 {
			ikey := p.prefix + next.Object + suffixIndex
			p.t.chunks.Prefetch(ikey, func(ctx context.Context) ([]byte, error) { return p.getAll(ctx, ikey, next.IndexSize) })
		}
		nkey := p.prefix + next.Object + suffixLog
		p.t.chunks.Prefetch(nkey+"#0", p.chunkLoader(nkey, next.Size, 0))
		e = next
	}
}

// segmentsAhead is how many following segments a reader near a segment's
// end gets started: a cold GET of a chunk takes longer than a consumer
// takes to read one, so a single segment ahead still leaves it waiting.
const segmentsAhead = 2

// getAll reads a whole small object and checks its size.
func (p *Partition) getAll(ctx context.Context, key string, size int64) ([]byte, error) {
	b, _, err := p.bucket.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != size {
		return nil, fmt.Errorf("tiering: %s has %d bytes, the manifest says %d", key, len(b), size)
	}
	return b, nil
}
