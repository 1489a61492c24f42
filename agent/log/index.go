package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// The two sparse indexes of a segment live in memory while the segment is
// open and are written whole to their files (write-temp, fsync, rename) when
// the segment is sealed and at Close. The files of the active segment are
// therefore stale while it takes appends; after a crash recovery rebuilds
// the active segment's indexes from its batches, so they never need an
// fsync on the append path.
//
// The files use Apache Kafka's layout (no header, so no version field: they
// are derived data that recovery rebuilds whenever they fail a check):
//
//	.index      entries of 8 bytes:  relative base offset u32 | file position u32
//	.timeindex  entries of 12 bytes: max timestamp so far i64 | relative base offset u32
//
// Offset entries point at batch starts; both offsets and positions strictly
// increase. A time entry (T, r) says: the largest MaxTimestamp among the
// batches up to and including the one at relative offset r is T, and batch r
// carries it. T and r strictly increase.

const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

var errIndex = errors.New("log: index does not match segment")

type offsetEntry struct {
	rel uint32
	pos uint32
}

type timeEntry struct {
	ts  int64
	rel uint32
}

type indexes struct {
	offsets []offsetEntry
	times   []timeEntry
}

// floor returns the entry with the largest relative offset <= rel, or the
// segment start when there is none.
func (x *indexes) floor(rel uint32) offsetEntry {
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i].rel > rel })
	if i == 0 {
		return offsetEntry{}
	}
	return x.offsets[i-1]
}

// ceil returns the first entry with relative offset >= rel.
func (x *indexes) ceil(rel uint32) (offsetEntry, bool) {
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i].rel >= rel })
	if i == len(x.offsets) {
		return offsetEntry{}, false
	}
	return x.offsets[i], true
}

// timeBefore returns the last time entry whose timestamp is below ts.
func (x *indexes) timeBefore(ts int64) (timeEntry, bool) {
	i := sort.Search(len(x.times), func(i int) bool { return x.times[i].ts >= ts })
	if i == 0 {
		return timeEntry{}, false
	}
	return x.times[i-1], true
}

func (x *indexes) lastTime() (timeEntry, bool) {
	if len(x.times) == 0 {
		return timeEntry{}, false
	}
	return x.times[len(x.times)-1], true
}

// cut drops entries at or after relative offset rel.
func (x *indexes) cut(rel uint32) {
	i := sort.Search(len(x.offsets), func(i int) bool { return x.offsets[i].rel >= rel })
	x.offsets = x.offsets[:i]
	j := sort.Search(len(x.times), func(i int) bool { return x.times[i].rel >= rel })
	x.times = x.times[:j]
}

func (x *indexes) equal(y *indexes) bool {
	if len(x.offsets) != len(y.offsets) || len(x.times) != len(y.times) {
		return false
	}
	for i := range x.offsets {
		if x.offsets[i] != y.offsets[i] {
			return false
		}
	}
	for i := range x.times {
		if x.times[i] != y.times[i] {
			return false
		}
	}
	return true
}

func encodeOffsets(es []offsetEntry) []byte {
	b := make([]byte, len(es)*offsetEntrySize)
	for i, e := range es {
		binary.BigEndian.PutUint32(b[i*offsetEntrySize:], e.rel)
		binary.BigEndian.PutUint32(b[i*offsetEntrySize+4:], e.pos)
	}
	return b
}

func encodeTimes(es []timeEntry) []byte {
	b := make([]byte, len(es)*timeEntrySize)
	for i, e := range es {
		binary.BigEndian.PutUint64(b[i*timeEntrySize:], uint64(e.ts))
		binary.BigEndian.PutUint32(b[i*timeEntrySize+8:], e.rel)
	}
	return b
}

// decodeOffsets parses and checks an offset index for a segment file of
// logSize bytes.
func decodeOffsets(b []byte, logSize int64) ([]offsetEntry, error) {
	if len(b)%offsetEntrySize != 0 {
		return nil, fmt.Errorf("%w: offset index of %d bytes", errIndex, len(b))
	}
	es := make([]offsetEntry, len(b)/offsetEntrySize)
	for i := range es {
		e := offsetEntry{
			rel: binary.BigEndian.Uint32(b[i*offsetEntrySize:]),
			pos: binary.BigEndian.Uint32(b[i*offsetEntrySize+4:]),
		}
		if int64(e.pos) >= logSize || (i > 0 && (e.rel <= es[i-1].rel || e.pos <= es[i-1].pos)) {
			return nil, fmt.Errorf("%w: offset entry %d (%d, %d)", errIndex, i, e.rel, e.pos)
		}
		es[i] = e
	}
	return es, nil
}

func decodeTimes(b []byte) ([]timeEntry, error) {
	if len(b)%timeEntrySize != 0 {
		return nil, fmt.Errorf("%w: time index of %d bytes", errIndex, len(b))
	}
	es := make([]timeEntry, len(b)/timeEntrySize)
	for i := range es {
		e := timeEntry{
			ts:  int64(binary.BigEndian.Uint64(b[i*timeEntrySize:])),
			rel: binary.BigEndian.Uint32(b[i*timeEntrySize+8:]),
		}
		if i > 0 && (e.ts <= es[i-1].ts || e.rel <= es[i-1].rel) {
			return nil, fmt.Errorf("%w: time entry %d (%d, %d)", errIndex, i, e.ts, e.rel)
		}
		es[i] = e
	}
	return es, nil
}
