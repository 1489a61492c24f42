package tiering

// Remote retention and cleanup: retention.ms and retention.bytes apply to
// the whole partition (bucket and local disk); the oldest uploaded
// segments past either limit leave the manifest first, then their objects
// are deleted. DeleteRecords does the same at an offset. The orphan
// janitor deletes objects no manifest names once they are older than a
// grace period (an upload cut short by a crash, a delete that failed).

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// ApplyRetention drops uploaded segments past retention.ms (every record
// older than now - retentionMs; negative: forever) or past retention.bytes
// (the partition's bytes, bucket and local together, above the limit; -1:
// none). It returns how many segments it dropped.
func (p *Partition) ApplyRetention(ctx context.Context, now time.Time, retentionMs, retentionBytes int64) (int, error) {
	if !p.src.Leading() {
		return 0, nil
	}
	h := p.head()
	if h.Empty() {
		return 0, nil
	}
	total := h.Bytes() + p.localOnlyBytes(h.Next())
	start := h.StartOffset
	// Oldest first, page by page, stopping at the first segment to keep:
	// a run reads only the pages it drops from, not the whole manifest.
	err := p.manifest.Walk(ctx, &h, func(e Entry) bool {
		newest := e.MaxTimestamp
		if newest < 0 {
			newest = e.UploadedMs // records without timestamps: age from the upload
		}
		// An entry with no bytes (a segment the cleaner emptied) holds
		// nothing to keep: it must not stop retention at its upload time.
		expired := retentionMs >= 0 && (e.Size == 0 || now.UnixMilli()-newest > retentionMs)
		oversize := retentionBytes >= 0 && total-e.Size >= retentionBytes
		if !expired && !oversize {
			return false
		}
		total -= e.Size
		start = e.Next
		return true
	})
	if err != nil {
		return 0, err
	}
	if start <= h.StartOffset {
		return 0, nil
	}
	dropped, err := p.truncate(ctx, start)
	if err != nil {
		return 0, err
	}
	if l := p.src.Log(); start > l.LogStartOffset() {
		if err := l.DeleteRecordsBefore(min(start, l.LogEndOffset())); err != nil {
			return 0, err
		}
	}
	p.t.logger.Info("remote retention", "partition", p.name(), "start", start, "segments", dropped)
	return dropped, nil
}

// localOnlyBytes is the local data not in the bucket: the log's bytes minus
// its sealed segments that end at or below next.
func (p *Partition) localOnlyBytes(next int64) int64 {
	l := p.src.Log()
	n := l.Size()
	for _, s := range l.SealedSegments(0) {
		if s.Next <= next {
			n -= s.Size
		}
	}
	return max(n, 0)
}

// DeleteRecords raises the partition's start to offset in the bucket and
// locally (DeleteRecords). The caller checks offset <= high watermark.
// The manifest's start moves to offset even past what is uploaded, so the
// next upload, of a segment that holds offsets below it, does not bring
// them back.
func (p *Partition) DeleteRecords(ctx context.Context, offset int64) error {
	if h := p.head(); offset > h.StartOffset {
		if _, err := p.truncate(ctx, offset); err != nil {
			return err
		}
	}
	return p.src.Log().DeleteRecordsBefore(offset)
}

// CleanOrphans deletes the partition's segment and page objects that its
// manifest does not name and that are older than the grace period. Segment
// objects at or above the manifest's end are never deleted: they may be an
// upload still in progress (its small objects go first; its .log may take
// longer than the grace); nor are the objects of a compaction pass in
// progress (compact.go), which lie below the end but are named by no head
// until the pass swaps them in. It runs at most once per half grace period and
// returns how many objects it deleted. Objects a compaction retired are
// deleted on every call once retired for the compaction grace: that needs
// no listing.
func (p *Partition) CleanOrphans(ctx context.Context, now time.Time) (int, error) {
	retired, err := p.deleteRetired(ctx, now)
	if err != nil {
		return retired, err
	}
	p.mu.Lock()
	if now.Sub(p.cleaned) < p.t.cfg.OrphanGrace/2 {
		p.mu.Unlock()
		return retired, nil
	}
	p.cleaned = now
	p.mu.Unlock()
	h, _, err := p.manifest.Load(ctx)
	if err != nil {
		return retired, err
	}
	known, err := p.namedBy(ctx, &h)
	if err != nil {
		return 0, err
	}
	type candidate struct{ key, object string }
	var candidates []candidate
	for _, dir := range []string{"segments/", "manifest/pages/"} {
		err := p.bucket.List(ctx, p.prefix+dir, func(key string, attrs objstore.Attributes) error {
			rel := strings.TrimPrefix(key, p.prefix)
			object := rel
			if dir == "segments/" {
				object = rel[:len(rel)-len(suffixOf(rel))]
				if base, ok := segmentBase(object); !ok || base >= h.Next() {
					return nil
				}
			}
			if !known[object] && now.Sub(attrs.LastModified) > p.t.cfg.OrphanGrace {
				candidates = append(candidates, candidate{key, object})
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if len(candidates) == 0 {
		return retired, nil
	}
	// A compaction pass writes objects below Next() that no head names
	// until its swap, which may have happened during the listing: spare
	// what a pass holds now, then what the head names now (a pass lets go
	// of its objects only after its swap).
	p.mu.Lock()
	holding := maps.Clone(p.compacting)
	p.mu.Unlock()
	if h, _, err = p.manifest.Load(ctx); err != nil {
		return retired, err
	}
	if known, err = p.namedBy(ctx, &h); err != nil {
		return retired, err
	}
	var orphans []string
	for _, c := range candidates {
		if !known[c.object] && !holding[c.object] {
			orphans = append(orphans, c.key)
		}
	}
	for _, k := range orphans {
		if err := p.bucket.Delete(ctx, k); err != nil {
			return 0, err
		}
		p.t.logger.Info("orphan object deleted", "partition", p.name(), "key", k)
	}
	return retired + len(orphans), nil
}

// namedBy returns the objects and pages head h names: its entries, those
// of its pages (an entry of a page partly below the start stays named
// until the whole page goes), the pages, and the retired objects (the
// compaction grace applies to them, deleteRetired).
func (p *Partition) namedBy(ctx context.Context, h *Head) (map[string]bool, error) {
	entries, err := p.manifest.All(ctx, h)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, r := range h.Retired {
		named[r.Key] = true
	}
	for _, e := range entries {
		named[e.Object] = true
	}
	for _, ref := range h.Pages {
		named[ref.Key] = true
		page, err := p.manifest.Page(ctx, ref)
		if err != nil {
			return nil, err
		}
		for _, e := range page {
			named[e.Object] = true
		}
	}
	return named, nil
}

// deleteRetired deletes the objects of the head's retired entries that
// have waited the compaction grace, then drops them from the head.
func (p *Partition) deleteRetired(ctx context.Context, now time.Time) (int, error) {
	h := p.head()
	due := map[string]bool{}
	var keys []string
	for _, r := range h.Retired {
		if now.UnixMilli()-r.RetiredMs < p.t.cfg.CompactionGrace.Milliseconds() {
			continue
		}
		due[r.Key] = true
		if r.Page {
			keys = append(keys, p.prefix+r.Key)
			continue
		}
		for _, s := range r.Suffixes {
			keys = append(keys, p.prefix+r.Key+s)
		}
	}
	if len(due) == 0 {
		return 0, nil
	}
	// A pass over a large run retires thousands of objects. A failure
	// keeps them all retired, for the next call.
	if failed := p.deleteKeys(ctx, keys); len(failed) > 0 {
		return 0, fmt.Errorf("tiering: %s: delete %s (and %d more): %w", p.name(), failed[0].key, len(failed)-1, failed[0].err)
	}
	nh, err := p.manifest.Unretire(ctx, p.src.LeaderEpoch(), due)
	if err != nil {
		return 0, err
	}
	p.setHead(nh)
	p.t.logger.Info("retired objects deleted", "partition", p.name(), "objects", len(due))
	return len(due), nil
}

// segmentBase reads the base offset from a segment object name,
// segments/<base:020d>-<epoch>-<id>.
func segmentBase(object string) (int64, bool) {
	name := strings.TrimPrefix(object, "segments/")
	digits, _, ok := strings.Cut(name, "-")
	if !ok {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil
}

// suffixOf returns the object suffix (".log", ...) of a segment key.
func suffixOf(key string) string {
	for _, s := range []string{suffixLog, suffixIndex, suffixTimeIndex, suffixSnapshot, suffixTxnIndex} {
		if strings.HasSuffix(key, s) {
			return s
		}
	}
	return ""
}
