// Package txnindex is Kafka's transaction index: the aborted transactions
// of a log segment, in the .txnindex format that both the local log
// (agent/log) and its uploaded copy in the bucket (tiering) use, and the
// rule a read_committed fetch collects them by.
//
// The file is a sequence of 34-byte entries in marker order:
//
//	version int16 (0) | producer id int64 | first offset int64 |
//	last offset int64 | last stable offset int64
package txnindex

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EntrySize is the size of one entry.
const EntrySize = 34

// Entry is one aborted transaction: the batches of ProducerID in
// [FirstOffset, LastOffset] are not to be read at read_committed
// (LastOffset is the offset of its abort marker). LastStableOffset is the
// partition's last stable offset once it was aborted.
type Entry struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// ErrBad is an index that is not whole, well-ordered entries of its segment.
var ErrBad = errors.New("txnindex: bad transaction index")

// Encode returns the entries in the file format.
func Encode(entries []Entry) []byte {
	b := make([]byte, 0, len(entries)*EntrySize)
	for _, a := range entries {
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
	}
	return b
}

// Decode reads the index of the segment [base, next): every marker must
// lie in it, in ascending order.
func Decode(b []byte, base, next int64) ([]Entry, error) {
	if len(b)%EntrySize != 0 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBad, len(b))
	}
	out := make([]Entry, 0, len(b)/EntrySize)
	for ; len(b) > 0; b = b[EntrySize:] {
		a := Entry{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		switch {
		case binary.BigEndian.Uint16(b) != 0:
			return nil, fmt.Errorf("%w: entry version %d", ErrBad, binary.BigEndian.Uint16(b))
		case a.ProducerID < 0 || a.FirstOffset < 0 || a.FirstOffset > a.LastOffset || a.LastOffset < base || a.LastOffset >= next ||
			len(out) > 0 && out[len(out)-1].LastOffset >= a.LastOffset:
			return nil, fmt.Errorf("%w: entry %+v in segment [%d, %d)", ErrBad, a, base, next)
		}
		out = append(out, a)
	}
	return out, nil
}

// Collect appends to out the entries of one segment's index that overlap
// [from, upper), and reports whether the search is complete: an entry's
// last stable offset at or past upper shows that every transaction that
// could overlap was decided before it, so later segments need not be read
// (Kafka's TransactionIndex.collectAbortedTxns).
func Collect(out, entries []Entry, from, upper int64) ([]Entry, bool) {
	for _, a := range entries {
		if a.LastOffset >= from && a.FirstOffset < upper {
			out = append(out, a)
		}
		if a.LastStableOffset >= upper {
			return out, true
		}
	}
	return out, false
}
