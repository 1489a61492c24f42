package tiering

// The manifest of a partition lists its uploaded segments (docs/design.md §5,
// §7). It is a head object, changed only by CAS, plus immutable pages:
//
//	<partition>/manifest/head.json               start offset, leader epoch, page refs, the newest entries
//	<partition>/manifest/pages/<base>-<uuid>.json  up to PageSize entries, written once
//
// When the head's tail reaches PageSize entries they move into a new page,
// so the head stays small (one short ref per page) however many segments a
// partition has, and an offset or a timestamp is found by binary search
// over the refs and then over one page: O(log n) with one page read.
// Every head write checks the leader epoch stored in it: a leader older
// than the last writer is fenced.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// Errors of manifest updates.
var (
	// ErrFenced: a newer leader has written the manifest.
	ErrFenced = errors.New("tiering: fenced by a newer leader epoch")
	// ErrNotContiguous: a segment does not start where the manifest ends.
	ErrNotContiguous = errors.New("tiering: segment does not continue the manifest")
	// ErrBelowStart: a segment ends at or below the manifest's start (a
	// DeleteRecords passed it while it was uploading).
	ErrBelowStart = errors.New("tiering: segment lies below the manifest's start")
)

// manifestVersion is the version of head and page objects.
const manifestVersion = 1

// DefaultPageSize is how many entries a manifest page holds.
const DefaultPageSize = 1000

// Entry is one uploaded segment: offsets [Base, Next), its objects (Object
// plus ".log", ".index", ".timeindex", with Snapshot ".snap", and with a
// TxnIndexSize ".txnindex") and what readers and `strata verify` need to
// trust them.
type Entry struct {
	Base         int64  `json:"base"`
	Next         int64  `json:"next"`
	Size         int64  `json:"size"`
	MaxTimestamp int64  `json:"max_timestamp"`
	LeaderEpoch  int32  `json:"leader_epoch"`
	Object       string `json:"object"` // key under the partition prefix, without suffix
	CRC32C       uint32 `json:"crc32c"` // of the .log object
	IndexSize    int64  `json:"index_size"`
	TimeSize     int64  `json:"timeindex_size"`
	TxnIndexSize int64  `json:"txnindex_size,omitempty"`
	Snapshot     bool   `json:"snapshot,omitempty"`
	UploadedMs   int64  `json:"uploaded_ms"`
	// Compacted: written by the remote compactor (compact.go), so its
	// records are clean as of that pass: the compactor's map skips it.
	Compacted bool `json:"compacted,omitempty"`
}

// PageRef names a page and summarises it for lookups.
type PageRef struct {
	Key          string `json:"key"` // under the partition prefix
	Base         int64  `json:"base"`
	Next         int64  `json:"next"`
	MaxTimestamp int64  `json:"max_timestamp"`
	Count        int    `json:"count"`
	Size         int64  `json:"size"`
}

// Head is the manifest head.
type Head struct {
	Version int `json:"version"`
	// Revision grows with every write, so that of two heads in memory the
	// newer one wins (the uploader and retention both write it).
	Revision    int64     `json:"revision"`
	LeaderEpoch int32     `json:"leader_epoch"`
	StartOffset int64     `json:"start_offset"` // records below are deleted
	Pages       []PageRef `json:"pages"`
	Tail        []Entry   `json:"tail"`
	// SkippedCount and SkippedBytes are the entries of the first page that
	// lie wholly below StartOffset: deleted from the store, still listed
	// in the immutable page until all of it is dropped.
	SkippedCount int   `json:"skipped_count,omitempty"`
	SkippedBytes int64 `json:"skipped_bytes,omitempty"`
	// Retired lists what a compaction swap took out of the manifest:
	// objects a reader holding an older head may still be reading. The
	// orphan janitor deletes them once retired for the compaction grace
	// (retention.go), and they are not orphans until then.
	Retired []Retired `json:"retired,omitempty"`
}

// Retired is a segment object (without suffix) or a page key that a
// compaction swap removed from the manifest at RetiredMs.
type Retired struct {
	Key       string   `json:"key"`
	Page      bool     `json:"page,omitempty"`
	Suffixes  []string `json:"suffixes,omitempty"` // a segment's objects (Entry.suffixes)
	RetiredMs int64    `json:"retired_ms"`
}

type page struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Empty reports whether the manifest holds no segment.
func (h *Head) Empty() bool { return len(h.Pages) == 0 && len(h.Tail) == 0 }

// Next is the offset after the last uploaded segment, or StartOffset.
func (h *Head) Next() int64 {
	if n := len(h.Tail); n > 0 {
		return h.Tail[n-1].Next
	}
	if n := len(h.Pages); n > 0 {
		return h.Pages[n-1].Next
	}
	return h.StartOffset
}

// Segments is the number of segments at or above the start.
func (h *Head) Segments() int {
	n := len(h.Tail) - h.SkippedCount
	for _, p := range h.Pages {
		n += p.Count
	}
	return n
}

// Bytes is the size of every segment at or above the start.
func (h *Head) Bytes() int64 {
	n := -h.SkippedBytes
	for _, p := range h.Pages {
		n += p.Size
	}
	for _, e := range h.Tail {
		n += e.Size
	}
	return n
}

// Manifest reads and writes one partition's manifest. Safe for concurrent
// use; pages, being immutable, are cached once read.
type Manifest struct {
	bucket   objstore.Bucket
	prefix   string // the partition prefix, ending in "/"
	pageSize int

	mu    sync.Mutex
	pages map[string][]Entry
}

// maxCachedPages bounds the page cache of one manifest.
const maxCachedPages = 64

// maxManifestBytes bounds a head or page read.
const maxManifestBytes = 64 << 20

// NewManifest returns the manifest of the partition at prefix.
func NewManifest(b objstore.Bucket, prefix string, pageSize int) *Manifest {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	return &Manifest{bucket: b, prefix: prefix, pageSize: pageSize, pages: map[string][]Entry{}}
}

func (m *Manifest) headKey() string { return m.prefix + "manifest/head.json" }

// Load reads the head and its ETag; a missing head is an empty manifest
// with an empty ETag.
func (m *Manifest) Load(ctx context.Context) (Head, string, error) {
	b, attrs, err := m.bucket.Get(ctx, m.headKey())
	if objstore.IsNotFound(err) {
		return Head{Version: manifestVersion, LeaderEpoch: -1}, "", nil
	}
	if err != nil {
		return Head{}, "", fmt.Errorf("tiering: read %s: %w", m.headKey(), err)
	}
	var h Head
	if err := json.Unmarshal(b, &h); err != nil {
		return Head{}, "", fmt.Errorf("tiering: decode %s: %w", m.headKey(), err)
	}
	if h.Version < 1 || h.Version > manifestVersion {
		return Head{}, "", fmt.Errorf("tiering: %s has version %d; this agent reads 1-%d", m.headKey(), h.Version, manifestVersion)
	}
	return h, attrs.ETag, nil
}

// update applies fn to the current head and writes it by CAS, retrying a
// lost race a few times. fn may be called more than once.
func (m *Manifest) update(ctx context.Context, epoch int32, fn func(*Head) error) (Head, error) {
	for attempt := 0; ; attempt++ {
		h, etag, err := m.Load(ctx)
		if err != nil {
			return Head{}, err
		}
		if h.LeaderEpoch > epoch {
			return Head{}, fmt.Errorf("%w: manifest %s is at epoch %d, this leader at %d", ErrFenced, m.headKey(), h.LeaderEpoch, epoch)
		}
		h.LeaderEpoch = epoch
		h.Revision++
		if err := fn(&h); err != nil {
			return Head{}, err
		}
		b, err := json.Marshal(h)
		if err != nil {
			return Head{}, err
		}
		opts := objstore.PutOptions{IfMatch: etag, IfAbsent: etag == ""}
		_, err = m.bucket.Put(ctx, m.headKey(), b, opts)
		if err == nil {
			return h, nil
		}
		if !objstore.IsPreconditionFailed(err) || attempt >= 5 {
			return Head{}, fmt.Errorf("tiering: write %s: %w", m.headKey(), err)
		}
	}
}

// Append adds an uploaded segment at the end. The first segment of an
// empty manifest sets its start; later ones must reach past Next() without
// a gap, and one wholly below the start is refused with ErrBelowStart. A
// segment may start below Next(): replicas roll their segments at
// different offsets, so a new leader's first upload can overlap the old
// leader's last. The overlap holds the same records (they were committed),
// and Find picks the older entry for them, so readers are unaffected.
func (m *Manifest) Append(ctx context.Context, epoch int32, e Entry) (Head, error) {
	return m.update(ctx, epoch, func(h *Head) error {
		if e.Next <= h.StartOffset {
			// Taking it would put the manifest's end below its start.
			return fmt.Errorf("%w: segment [%d, %d), start %d", ErrBelowStart, e.Base, e.Next, h.StartOffset)
		}
		if h.Empty() {
			h.StartOffset = max(h.StartOffset, e.Base)
		} else if e.Base > h.Next() || e.Next <= h.Next() {
			return fmt.Errorf("%w: segment [%d, %d), manifest ends at %d", ErrNotContiguous, e.Base, e.Next, h.Next())
		}
		h.Tail = append(h.Tail, e)
		if len(h.Tail) < m.pageSize {
			return nil
		}
		ref, err := m.writePage(ctx, h.Tail)
		if err != nil {
			return err
		}
		h.Pages = append(h.Pages, ref)
		h.Tail = nil
		return nil
	})
}

func (m *Manifest) writePage(ctx context.Context, entries []Entry) (PageRef, error) {
	var id [8]byte
	rand.Read(id[:])
	key := fmt.Sprintf("manifest/pages/%020d-%s.json", entries[0].Base, hex.EncodeToString(id[:]))
	b, err := json.Marshal(page{Version: manifestVersion, Entries: entries})
	if err != nil {
		return PageRef{}, err
	}
	if _, err := m.bucket.Put(ctx, m.prefix+key, b, objstore.PutOptions{IfAbsent: true}); err != nil {
		return PageRef{}, fmt.Errorf("tiering: write page %s: %w", key, err)
	}
	ref := PageRef{Key: key, Base: entries[0].Base, Next: entries[len(entries)-1].Next, Count: len(entries), MaxTimestamp: -1}
	for _, e := range entries {
		ref.Size += e.Size
		ref.MaxTimestamp = max(ref.MaxTimestamp, e.MaxTimestamp)
	}
	m.cachePage(key, entries)
	return ref, nil
}

func (m *Manifest) cachePage(key string, entries []Entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pages) >= maxCachedPages {
		for k := range m.pages {
			delete(m.pages, k)
			break
		}
	}
	m.pages[key] = entries
}

// Page returns the entries of a page.
func (m *Manifest) Page(ctx context.Context, ref PageRef) ([]Entry, error) {
	m.mu.Lock()
	entries, ok := m.pages[ref.Key]
	m.mu.Unlock()
	if ok {
		return entries, nil
	}
	b, _, err := m.bucket.Get(ctx, m.prefix+ref.Key)
	if err != nil {
		return nil, fmt.Errorf("tiering: read page %s: %w", ref.Key, err)
	}
	var p page
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("tiering: decode page %s: %w", ref.Key, err)
	}
	if p.Version < 1 || p.Version > manifestVersion || len(p.Entries) != ref.Count {
		return nil, fmt.Errorf("tiering: page %s: version %d with %d entries, want %d", ref.Key, p.Version, len(p.Entries), ref.Count)
	}
	m.cachePage(ref.Key, p.Entries)
	return p.Entries, nil
}

// Find returns the entry holding offset; ok is false when no uploaded
// segment above the start offset holds it.
func (m *Manifest) Find(ctx context.Context, h *Head, offset int64) (Entry, bool, error) {
	if offset < h.StartOffset || offset >= h.Next() {
		return Entry{}, false, nil
	}
	entries := h.Tail
	if i := sort.Search(len(h.Pages), func(i int) bool { return h.Pages[i].Next > offset }); i < len(h.Pages) {
		var err error
		if entries, err = m.Page(ctx, h.Pages[i]); err != nil {
			return Entry{}, false, err
		}
	}
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Next > offset })
	if i == len(entries) || entries[i].Base > offset {
		return Entry{}, false, nil
	}
	return entries[i], true, nil
}

// FindByTime returns the first entry whose newest record is at or after
// ts; ok is false when there is none.
func (m *Manifest) FindByTime(ctx context.Context, h *Head, ts int64) (Entry, bool, error) {
	for _, ref := range h.Pages {
		if ref.MaxTimestamp < ts || ref.Next <= h.StartOffset {
			continue
		}
		entries, err := m.Page(ctx, ref)
		if err != nil {
			return Entry{}, false, err
		}
		if e, ok := firstAtOrAfter(entries, ts, h.StartOffset); ok {
			return e, true, nil
		}
	}
	e, ok := firstAtOrAfter(h.Tail, ts, h.StartOffset)
	return e, ok, nil
}

func firstAtOrAfter(entries []Entry, ts, start int64) (Entry, bool) {
	for _, e := range entries {
		if e.Next > start && e.MaxTimestamp >= ts {
			return e, true
		}
	}
	return Entry{}, false
}

// Walk calls fn with every entry above the start offset, oldest first,
// reading pages as it goes, until fn returns false.
func (m *Manifest) Walk(ctx context.Context, h *Head, fn func(Entry) bool) error {
	visit := func(entries []Entry) bool {
		for _, e := range entries {
			if e.Next > h.StartOffset && !fn(e) {
				return false
			}
		}
		return true
	}
	for _, ref := range h.Pages {
		if ref.Next <= h.StartOffset {
			continue
		}
		entries, err := m.Page(ctx, ref)
		if err != nil {
			return err
		}
		if !visit(entries) {
			return nil
		}
	}
	visit(h.Tail)
	return nil
}

// All returns every entry above the start offset, oldest first.
func (m *Manifest) All(ctx context.Context, h *Head) ([]Entry, error) {
	var out []Entry
	for _, ref := range h.Pages {
		if ref.Next <= h.StartOffset {
			continue
		}
		entries, err := m.Page(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	out = append(out, h.Tail...)
	for len(out) > 0 && out[0].Next <= h.StartOffset {
		out = out[1:]
	}
	return out, nil
}

// Truncate raises the start offset to start (retention, DeleteRecords),
// also on an empty manifest, and drops the entries wholly below it, and the
// pages all of whose entries are. It returns the dropped entries and page
// keys, whose objects the caller deletes once this returns: a reader that
// loaded the old head may still fetch them, and fails over to
// OFFSET_OUT_OF_RANGE as with a local segment deleted under it.
func (m *Manifest) Truncate(ctx context.Context, epoch int32, start int64) (Head, []Entry, []string, error) {
	var dropped []Entry
	var pages []string
	h, err := m.update(ctx, epoch, func(h *Head) error {
		dropped, pages = nil, nil
		if start <= h.StartOffset {
			return nil
		}
		old := h.StartOffset
		h.StartOffset = start
		h.SkippedCount, h.SkippedBytes = 0, 0
		for len(h.Pages) > 0 && h.Pages[0].Base < start {
			entries, err := m.Page(ctx, h.Pages[0])
			if err != nil {
				return err
			}
			for _, e := range entries {
				switch {
				case e.Next > start:
				case e.Next > old:
					dropped = append(dropped, e) // newly below the start
					fallthrough
				default:
					h.SkippedCount++
					h.SkippedBytes += e.Size
				}
			}
			if h.Pages[0].Next > start {
				break // the page keeps entries at or above the start
			}
			pages = append(pages, h.Pages[0].Key)
			h.Pages = h.Pages[1:]
			h.SkippedCount, h.SkippedBytes = 0, 0
		}
		for len(h.Pages) == 0 && len(h.Tail) > 0 && h.Tail[0].Next <= start {
			dropped = append(dropped, h.Tail[0])
			h.Tail = h.Tail[1:]
		}
		return nil
	})
	return h, dropped, pages, err
}
