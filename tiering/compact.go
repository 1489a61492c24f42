package tiering

// Remote compaction (docs/design.md §7, "Tiered compaction"): for a
// compacted topic, the partition's leader rewrites a run of uploaded
// segments into fewer compacted objects and swaps them into the manifest
// with one conditional write (compactswap.go). The rules for records are
// the log cleaner's, applied through Rules (agent/log's BatchCleaner); this
// file only moves bytes:
//
//  1. plan: the run is every entry from the manifest's start up to the
//     first that may not be cleaned: the manifest's last entry (the anchor
//     of a restore, with its producer snapshot), an entry reaching past the
//     last stable offset, or one younger than min.compaction.lag.ms. The
//     pass runs when the run's dirty bytes (entries no pass wrote) reach
//     min.cleanable.dirty.ratio of it, or when a dirty entry's newest
//     record is past max.compaction.lag.ms. Passes start at the remote start, as
//     Kafka's cleaner starts at the log start, so a tombstone dropped here
//     has no older value of its key left below it.
//  2. download: each .log object of the run is read ONCE, by one GET, into
//     a temporary file; its .txnindex too, if it has one.
//  3. map: every batch of the run is noted (producers, markers), then the
//     keys from the first dirty entry on go into the offset map. The map
//     covers the run, nothing above it: a record is dropped only when a
//     newer record of its key is in the run (or, when the map filled, in
//     the first entry after it, which stays in the bucket).
//  4. rewrite: the surviving batches go into objects of up to
//     segment.bytes, their indexes rebuilt, each PUT once. The rules
//     follow the transactions of the run from its transaction indexes,
//     as the local cleaner does (aborted data removed, markers dropped
//     after their delete horizon), and give the entries of the new
//     objects' transaction indexes.
//  5. swap, then retire the old objects; the janitor deletes them after
//     the compaction grace (retention.go).

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/strata-streaming/strata/internal/txnindex"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// Rules are the log cleaner's rules for one pass, over one offset map
// (agent/log.BatchCleaner implements them). Raw batches are valid only
// during a call.
type Rules interface {
	// NoteProducer sees every batch of the run, oldest first, before Map.
	NoteProducer(raw []byte) error
	// Map sees every batch from the first dirty one on, oldest first,
	// and adds its keys; false when the map filled.
	Map(raw []byte) (bool, error)
	// Filter returns the batch to write (raw, a rebuilt one, or nil) and
	// the records dropped.
	Filter(raw []byte, end int64, dropTombstones bool) ([]byte, int64, error)
	// TakeIndex returns the aborted transactions whose markers Filter
	// kept since the last call, in marker order: the new objects'
	// transaction index entries.
	TakeIndex() []txnindex.Entry
}

// SegmentBuilder tracks the batches of a compacted object and gives its
// indexes (agent/log.SegmentBuilder implements it).
type SegmentBuilder interface {
	Add(raw []byte) error
	Size() int64
	MaxTimestamp() int64
	OffsetIndex() []byte
	TimeIndex() []byte
}

// CompactOptions are one pass's settings, from the topic's configs.
type CompactOptions struct {
	Now                    time.Time
	LastStable             int64 // records at or past it are not cleaned
	MinCleanableDirtyRatio float64
	MinCompactionLagMs     int64
	// MaxCompactionLagMs (0: none): a dirty entry whose newest record is
	// older than this is compacted whatever the dirty ratio.
	MaxCompactionLagMs int64
	DeleteRetentionMs  int64
	SegmentBytes       int64
	TempDir            string // where the run is downloaded
	// NewRules starts the rules of a pass (resetting the offset map) over
	// the aborted transactions of the run's transaction indexes; called
	// only when there is a pass to run.
	NewRules   func(aborted []txnindex.Entry) Rules
	NewSegment func(base int64) SegmentBuilder
	// Pace accounts bytes read or written against the cleaner's I/O
	// limit; nil: none.
	Pace func(ctx context.Context, n int64) error
}

// CompactResult is what one pass did.
type CompactResult struct {
	ObjectsBefore, ObjectsAfter int
	BytesRead, BytesWritten     int64
	RecordsDropped              int64
	Gets, Puts                  int
}

// ErrCompactMapTooSmall: the offset map filled within the first dirty
// entry of the run.
var ErrCompactMapTooSmall = errors.New("tiering: offset map too small for one remote segment")

// runEntry is an entry of the run with its downloaded .log.
type runEntry struct {
	Entry
	file *os.File
	txn  []txnindex.Entry
}

// Compact runs one remote compaction pass if the partition leads and its
// bucket part is dirty enough; a zero result means there was nothing to do.
func (p *Partition) Compact(ctx context.Context, o CompactOptions) (CompactResult, error) {
	var res CompactResult
	if !p.src.Leading() {
		return res, nil
	}
	epoch := p.src.LeaderEpoch()
	h, err := p.currentHead(ctx)
	if err != nil {
		return res, err
	}
	run, err := p.planCompaction(ctx, &h, o)
	if err != nil || len(run) == 0 {
		return res, err
	}
	dir, err := os.MkdirTemp(o.TempDir, "remote-compaction-")
	if err != nil {
		return res, fmt.Errorf("tiering: %s: compaction temp dir: %w", p.name(), err)
	}
	defer os.RemoveAll(dir)
	downloaded, err := p.download(ctx, run, dir, o, &res)
	defer func() {
		for _, e := range downloaded {
			e.file.Close()
		}
	}()
	if err != nil {
		return res, fmt.Errorf("tiering: %s: compaction: %w", p.name(), err)
	}
	var aborted []txnindex.Entry
	for _, e := range downloaded {
		aborted = append(aborted, e.txn...)
	}
	rules := o.NewRules(aborted)
	entries, err := p.mapRun(ctx, downloaded, rules)
	if err != nil {
		return res, fmt.Errorf("tiering: %s: compaction: %w", p.name(), err)
	}
	defer p.doneCompacting()
	out, err := p.rewrite(ctx, entries, dir, epoch, rules, o, &res)
	if err != nil {
		// The new objects are named by no manifest: delete them now
		// rather than leave them to the janitor.
		p.t.deleteObjects(ctx, p, out, nil)
		return res, fmt.Errorf("tiering: %s: compaction: %w", p.name(), err)
	}
	run = run[:len(entries)]
	// The grace of the retired objects runs from the swap: readers may
	// hold the old head from any time before it.
	nh, err := p.manifest.Replace(ctx, epoch, run, out, max(o.Now.UnixMilli(), time.Now().UnixMilli()))
	if err != nil {
		p.dropUnswapped(ctx, out, err)
		return res, fmt.Errorf("tiering: %s: compaction: %w", p.name(), err)
	}
	p.setHead(nh)
	res.ObjectsBefore, res.ObjectsAfter = len(run), len(out)
	p.t.metrics.compacted(p.src.Topic(), res)
	p.t.logger.Info("remote compaction", "partition", p.name(), "from", run[0].Base, "to", run[len(run)-1].Next,
		"objects_before", res.ObjectsBefore, "objects_after", res.ObjectsAfter, "bytes_read", res.BytesRead,
		"bytes_written", res.BytesWritten, "records_dropped", res.RecordsDropped)
	return res, nil
}

// planCompaction returns the run to compact, nil when the bucket part is
// not dirty enough.
func (p *Partition) planCompaction(ctx context.Context, h *Head, o CompactOptions) ([]Entry, error) {
	all, err := p.manifest.All(ctx, h)
	if err != nil {
		return nil, err
	}
	var run []Entry
	var clean, dirty int64
	overdue := false
	for i, e := range all {
		young := o.MinCompactionLagMs > 0 && e.MaxTimestamp >= 0 && o.Now.UnixMilli()-e.MaxTimestamp < o.MinCompactionLagMs
		if i == len(all)-1 || e.Next > o.LastStable || young {
			break
		}
		run = append(run, e)
		if e.Compacted {
			clean += e.Size
			continue
		}
		dirty += e.Size
		newest := e.MaxTimestamp
		if newest < 0 {
			newest = e.UploadedMs
		}
		overdue = overdue || o.MaxCompactionLagMs > 0 && o.Now.UnixMilli()-newest > o.MaxCompactionLagMs
	}
	if dirty == 0 || !overdue && float64(dirty)/float64(clean+dirty) < o.MinCleanableDirtyRatio {
		return nil, nil
	}
	return run, nil
}

// download reads each entry's .log into a file under dir, with one GET.
func (p *Partition) download(ctx context.Context, run []Entry, dir string, o CompactOptions, res *CompactResult) ([]runEntry, error) {
	out := make([]runEntry, 0, len(run))
	for _, e := range run {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%020d.log", e.Base)))
		if err != nil {
			return out, err
		}
		out = append(out, runEntry{Entry: e, file: f})
		r, err := p.bucket.GetRange(ctx, p.prefix+e.Object+suffixLog, 0, e.Size)
		if err != nil {
			return out, fmt.Errorf("read %s: %w", e.Object, err)
		}
		h := crc32.New(castagnoli)
		n, err := io.Copy(io.MultiWriter(f, h), r)
		r.Close()
		res.Gets++
		res.BytesRead += n
		if err == nil && (n != e.Size || h.Sum32() != e.CRC32C) {
			err = fmt.Errorf("%s: %d bytes with CRC-32C %08x, the manifest says %d and %08x", e.Object, n, h.Sum32(), e.Size, e.CRC32C)
		}
		if err != nil {
			return out, fmt.Errorf("read %s: %w", e.Object, err)
		}
		if e.TxnIndexSize > 0 {
			b, err := p.getAll(ctx, p.prefix+e.Object+suffixTxnIndex, e.TxnIndexSize)
			res.Gets++
			if err != nil {
				return out, fmt.Errorf("read transaction index of %s: %w", e.Object, err)
			}
			if out[len(out)-1].txn, err = txnindex.Decode(b, e.Base, e.Next); err != nil {
				return out, fmt.Errorf("transaction index of %s: %w", e.Object, err)
			}
		}
		if err := pace(ctx, o, n); err != nil {
			return out, err
		}
	}
	return out, nil
}

func pace(ctx context.Context, o CompactOptions, n int64) error {
	if o.Pace == nil {
		return ctx.Err()
	}
	return o.Pace(ctx, n)
}

// mapRun notes every batch of the run, puts the keys from the first dirty
// entry on into the map, and returns the run cut where the map filled
// (the rest stays as it is, closed here). The notes come first, over the
// whole run (a second read of the local copy, not of the bucket): the
// rules must know, before a transactional batch enters the map, whether
// its transaction's marker is in the run.
func (p *Partition) mapRun(ctx context.Context, run []runEntry, rules Rules) ([]runEntry, error) {
	for _, e := range run {
		if err := eachBatch(e, func(raw []byte) (bool, error) { return true, rules.NoteProducer(raw) }); err != nil {
			return run, fmt.Errorf("note %s: %w", e.Object, err)
		}
	}
	dirty := false
	for i, e := range run {
		if dirty = dirty || !e.Compacted; !dirty {
			continue
		}
		full := false
		err := eachBatch(e, func(raw []byte) (bool, error) {
			ok, err := rules.Map(raw)
			full = !ok
			return ok, err
		})
		if err != nil {
			return run, fmt.Errorf("map %s: %w", e.Object, err)
		}
		if full {
			if i == 0 || !hasDirty(run[:i]) {
				return run, ErrCompactMapTooSmall
			}
			return run[:i], ctx.Err()
		}
	}
	return run, ctx.Err()
}

func hasDirty(run []runEntry) bool {
	for _, e := range run {
		if !e.Compacted {
			return true
		}
	}
	return false
}

// eachBatch walks the batches of a downloaded entry, oldest first, until
// fn returns false.
func eachBatch(e runEntry, fn func(raw []byte) (bool, error)) error {
	r := bufio.NewReaderSize(io.NewSectionReader(e.file, 0, e.Size), 1<<20)
	var buf []byte
	for pos := int64(0); pos < e.Size; {
		hdr, err := r.Peek(12)
		if err != nil {
			return fmt.Errorf("batch at position %d: %w", pos, err)
		}
		size := 12 + int64(int32(binary.BigEndian.Uint32(hdr[batchLengthOffset:])))
		if size < batchHeaderSize || pos+size > e.Size {
			return fmt.Errorf("bad batch at position %d", pos)
		}
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		pos += size
		more, err := fn(buf)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// rewrite writes the run's surviving batches as new objects, cutting a
// new one where the next batch would take the current one past
// segment.bytes (so that many small compacted segments become few
// objects), and returns their entries. Objects cover the run without a
// gap: each ends where the next one's first batch starts, the last at the
// run's end.
func (p *Partition) rewrite(ctx context.Context, run []runEntry, dir string, epoch int32, rules Rules, o CompactOptions, res *CompactResult) ([]Entry, error) {
	end := run[len(run)-1].Next
	var out []Entry
	var cur *objectWriter
	defer func() {
		if cur != nil {
			cur.f.Close() // a failed pass
		}
	}()
	var txn []txnindex.Entry
	finish := func(next int64) error {
		e, err := p.putObject(ctx, cur, next, txn, epoch, o, res)
		if err != nil {
			return err
		}
		out = append(out, e)
		cur = nil
		return nil
	}
	covered := run[0].Base // entries may overlap (Manifest.Append): each offset is taken once
	for _, e := range run {
		newest := e.MaxTimestamp
		if newest < 0 {
			newest = e.UploadedMs // records without timestamps: age from the upload, as retention does
		}
		dropTombstones := o.Now.UnixMilli()-newest > o.DeleteRetentionMs
		err := eachBatch(e, func(raw []byte) (bool, error) {
			if batchLast(raw) < covered {
				return true, nil
			}
			kept, dropped, err := rules.Filter(raw, end, dropTombstones)
			res.RecordsDropped += dropped
			txn = append(txn, rules.TakeIndex()...)
			if err != nil || kept == nil {
				return err == nil, err
			}
			base := int64(binary.BigEndian.Uint64(kept))
			if cur != nil && (cur.sb.Size()+int64(len(kept)) > o.SegmentBytes || batchLast(kept)-cur.base > math.MaxInt32) {
				if err := finish(base); err != nil {
					return false, err
				}
			}
			if cur == nil {
				from := base
				if len(out) == 0 {
					from = run[0].Base
				}
				if cur, err = newObjectWriter(dir, from, o); err != nil {
					return false, err
				}
			}
			cur.epoch = e.LeaderEpoch
			return true, cur.add(kept)
		})
		if err != nil {
			return out, fmt.Errorf("rewrite %s: %w", e.Object, err)
		}
		covered = max(covered, e.Next)
		if err := pace(ctx, o, e.Size); err != nil {
			return out, err
		}
	}
	if cur == nil { // every record went: one empty object keeps the offsets covered
		var err error
		from := run[0].Base
		if len(out) > 0 {
			from = out[len(out)-1].Next
		}
		if cur, err = newObjectWriter(dir, from, o); err != nil {
			return out, err
		}
		cur.epoch = run[len(run)-1].LeaderEpoch
	}
	return out, finish(end)
}

// batchLast is the last offset of a batch.
func batchLast(raw []byte) int64 {
	return int64(binary.BigEndian.Uint64(raw)) + int64(int32(binary.BigEndian.Uint32(raw[lastDeltaOffset:])))
}

// objectWriter is a compacted object being written to a temporary file.
type objectWriter struct {
	base  int64
	epoch int32 // of the input holding its last batch
	f     *os.File
	w     *bufio.Writer
	sum   hash.Hash32
	sb    SegmentBuilder
}

func newObjectWriter(dir string, base int64, o CompactOptions) (*objectWriter, error) {
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%020d.compacted", base)))
	if err != nil {
		return nil, err
	}
	return &objectWriter{base: base, f: f, w: bufio.NewWriterSize(f, 1<<20), sum: crc32.New(castagnoli), sb: o.NewSegment(base)}, nil
}

func (w *objectWriter) add(raw []byte) error {
	if err := w.sb.Add(raw); err != nil {
		return err
	}
	w.sum.Write(raw)
	_, err := w.w.Write(raw)
	return err
}

// putObject uploads the object w as [w.base, next), with the transaction
// index entries whose markers lie in it, and returns its entry.
func (p *Partition) putObject(ctx context.Context, w *objectWriter, next int64, txn []txnindex.Entry, epoch int32, o CompactOptions, res *CompactResult) (Entry, error) {
	defer w.f.Close()
	if err := w.w.Flush(); err != nil {
		return Entry{}, err
	}
	var id [8]byte
	rand.Read(id[:])
	object := fmt.Sprintf("segments/%020d-%d-%s", w.base, max(epoch, 0), hex.EncodeToString(id[:]))
	e := Entry{Base: w.base, Next: next, Size: w.sb.Size(), MaxTimestamp: w.sb.MaxTimestamp(), LeaderEpoch: w.epoch,
		Object: object, CRC32C: w.sum.Sum32(), Compacted: true, UploadedMs: o.Now.UnixMilli()}
	small := map[string][]byte{suffixIndex: w.sb.OffsetIndex(), suffixTimeIndex: w.sb.TimeIndex()}
	e.IndexSize, e.TimeSize = int64(len(small[suffixIndex])), int64(len(small[suffixTimeIndex]))
	var mine []txnindex.Entry
	for _, t := range txn {
		if t.LastOffset >= w.base && t.LastOffset < next {
			mine = append(mine, t)
		}
	}
	if len(mine) > 0 {
		small[suffixTxnIndex] = txnindex.Encode(mine)
		e.TxnIndexSize = int64(len(small[suffixTxnIndex]))
	}
	key := p.prefix + object
	p.mu.Lock()
	if p.compacting == nil {
		p.compacting = map[string]bool{}
	}
	p.compacting[object] = true
	p.mu.Unlock()
	var put []string
	failed := func(k string, err error) (Entry, error) {
		for _, k := range put { // best effort: what is left is the janitor's
			p.bucket.Delete(ctx, k)
		}
		return Entry{}, fmt.Errorf("upload %s: %w", k, err)
	}
	for _, s := range []string{suffixIndex, suffixTimeIndex, suffixTxnIndex} {
		if b, ok := small[s]; ok {
			if _, err := p.bucket.Put(ctx, key+s, b, objstore.PutOptions{IfAbsent: true}); err != nil {
				return failed(key+s, err)
			}
			put = append(put, key+s)
			res.Puts++
		}
	}
	if _, err := p.bucket.PutReader(ctx, key+suffixLog, w.f, e.Size, objstore.PutOptions{IfAbsent: true}); err != nil {
		return failed(key+suffixLog, err)
	}
	res.Puts++
	res.BytesWritten += e.Size
	return e, pace(ctx, o, e.Size)
}

// doneCompacting ends the pass's hold on its objects: those swapped in are
// the manifest's now, the others the janitor's.
func (p *Partition) doneCompacting() {
	p.mu.Lock()
	clear(p.compacting)
	p.mu.Unlock()
}

// dropUnswapped deletes the objects of a pass whose swap failed, but only
// those the manifest does not name: a head PUT whose answer was lost, or
// that the client retried into a 412, may have swapped them in all the
// same. When the failure leaves that unknown (the store did not answer,
// the head cannot be read), the objects stay for the orphan janitor, which
// looks at the head again before it deletes anything.
func (p *Partition) dropUnswapped(ctx context.Context, out []Entry, err error) {
	if !errors.Is(err, ErrFenced) && !errors.Is(err, ErrCompactRaced) {
		return
	}
	h, _, err := p.manifest.Load(ctx)
	if err != nil {
		return
	}
	named, err := p.namedBy(ctx, &h)
	if err != nil {
		return
	}
	var drop []Entry
	for _, e := range out {
		if !named[e.Object] {
			drop = append(drop, e)
		}
	}
	p.t.deleteObjects(ctx, p, drop, nil)
}
