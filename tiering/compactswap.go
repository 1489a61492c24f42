package tiering

// The manifest side of remote compaction (compact.go): a run of entries
// from the manifest's start is replaced by the compacted entries that cover
// the same offsets, in ONE conditional write of the head. The write goes
// through Manifest.update, so it is fenced by the leader epoch (a deposed
// leader's swap fails with ErrFenced) and retried on a lost CAS against
// the freshly read head: segments appended by the uploader meanwhile, or a
// page they filled, are carried over, never lost. Only a change to the run
// itself (retention or DeleteRecords moved the start) fails the swap with
// ErrCompactRaced; the pass's objects are then deleted and it runs again.
//
// Pages are immutable, so the pages holding the run are replaced by new
// ones holding the compacted entries and whatever else those pages held;
// the replaced objects and pages go to Head.Retired for the janitor.

import (
	"context"
	"errors"
	"fmt"
)

// ErrCompactRaced: the run a compaction rewrote is no longer the start of
// the manifest.
var ErrCompactRaced = errors.New("tiering: the compacted run changed under the compaction")

// Replace swaps run, the manifest's first entries above its start as the
// compactor read them, for out, which covers the same offsets, and marks
// the objects and pages it replaces retired at nowMs.
func (m *Manifest) Replace(ctx context.Context, epoch int32, run, out []Entry, nowMs int64) (Head, error) {
	if len(run) == 0 || len(out) == 0 || run[0].Base != out[0].Base || run[len(run)-1].Next != out[len(out)-1].Next {
		return Head{}, fmt.Errorf("tiering: replace: the compacted entries do not cover the run")
	}
	runEnd := run[len(run)-1].Next
	return m.update(ctx, epoch, func(h *Head) error {
		// The pages that hold run entries: every page that starts below the
		// run's end (a page wholly below the start was dropped by Truncate).
		k := 0
		for k < len(h.Pages) && h.Pages[k].Base < runEnd {
			k++
		}
		var held []Entry
		for _, ref := range h.Pages[:k] {
			entries, err := m.Page(ctx, ref)
			if err != nil {
				return err
			}
			held = append(held, entries...)
		}
		withTail := k == len(h.Pages)
		if withTail {
			held = append(held, h.Tail...)
		}
		for len(held) > 0 && held[0].Next <= h.StartOffset {
			held = held[1:] // below the start: its objects are already deleted
		}
		if len(held) < len(run) {
			return fmt.Errorf("%w: the manifest holds %d entries where the run had %d", ErrCompactRaced, len(held), len(run))
		}
		for i, e := range run {
			if held[i].Object != e.Object {
				return fmt.Errorf("%w: entry %d is %s, the run had %s", ErrCompactRaced, i, held[i].Object, e.Object)
			}
		}
		// Retire what leaves the manifest; build the list that replaces
		// the held entries. On a retried CAS, pages written by the lost
		// attempt are orphans for the janitor.
		retired := h.Retired[:len(h.Retired):len(h.Retired)]
		for _, e := range run {
			retired = append(retired, Retired{Key: e.Object, Suffixes: e.suffixes(), RetiredMs: nowMs})
		}
		for _, ref := range h.Pages[:k] {
			retired = append(retired, Retired{Key: ref.Key, Page: true, RetiredMs: nowMs})
		}
		list := append(append([]Entry(nil), out...), held[len(run):]...)
		var pages []PageRef
		for len(list) > 0 && (!withTail || len(list) >= m.pageSize) {
			n := min(len(list), m.pageSize)
			ref, err := m.writePage(ctx, list[:n])
			if err != nil {
				return err
			}
			pages = append(pages, ref)
			list = list[n:]
		}
		if withTail {
			h.Tail = list
		}
		h.Pages = append(pages, h.Pages[k:]...)
		if k > 0 {
			h.SkippedCount, h.SkippedBytes = 0, 0
		}
		h.Retired = retired
		return nil
	})
}

// Unretire drops the keys from the head's retired list, once the janitor
// has deleted their objects.
func (m *Manifest) Unretire(ctx context.Context, epoch int32, keys map[string]bool) (Head, error) {
	return m.update(ctx, epoch, func(h *Head) error {
		kept := h.Retired[:0:0]
		for _, r := range h.Retired {
			if !keys[r.Key] {
				kept = append(kept, r)
			}
		}
		h.Retired = kept
		return nil
	})
}
