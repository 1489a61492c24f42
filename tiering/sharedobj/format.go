package sharedobj

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/strata-streaming/strata/agent/log/batch"
)

const (
	magic       = "SDLO"
	version     = 1
	fixedSize   = 44 // up to the runs
	runSize     = 36
	trailerSize = 4 // the header's CRC

	// MaxRuns bounds the runs of one object, so that a corrupt run count
	// cannot make a reader allocate or read an absurd header: one object
	// per commit interval holds at most one run per diskless partition
	// the agent took batches for.
	MaxRuns = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt: the bytes are not a well-formed commit object, or do not
// match their checksums.
var ErrCorrupt = errors.New("sharedobj: corrupt commit object")

// Run is one partition's share of an object: its batches lie at
// [Position, Position+Length) of the data section.
type Run struct {
	TopicID   [16]byte
	Partition int32
	Position  int64
	Length    int32
	Batches   int32
}

// Header is what an object's header says.
type Header struct {
	ID      ID
	Writer  int32 // the agent that cut the object
	CutMs   int64 // unix ms, the writer's clock
	Runs    []Run
	DataCRC uint32
}

// Size is the header's length: where the data section starts.
func (h Header) Size() int { return HeaderSize(len(h.Runs)) }

// HeaderSize is the length of the header of an object of n runs.
func HeaderSize(n int) int { return fixedSize + runSize*n + trailerSize }

// Part is one partition's batches for Encode, in arrival order.
type Part struct {
	TopicID   [16]byte
	Partition int32
	Batches   [][]byte
}

// Encode builds the object of parts, one run per part, sorted by (topic
// id, partition). Each batch must be a whole RecordBatch v2 whose CRC
// holds; a partition may appear once.
func Encode(id ID, writer int32, cutMs int64, parts []Part) ([]byte, Header, error) {
	if len(parts) > MaxRuns {
		return nil, Header{}, fmt.Errorf("sharedobj: %d partitions in one object, at most %d", len(parts), MaxRuns)
	}
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, comparePart)
	h := Header{ID: id, Writer: writer, CutMs: cutMs, Runs: make([]Run, len(sorted))}
	var pos int64
	for i, p := range sorted {
		if i > 0 && comparePart(sorted[i-1], p) == 0 {
			return nil, Header{}, fmt.Errorf("sharedobj: partition %x/%d given twice", p.TopicID, p.Partition)
		}
		if len(p.Batches) == 0 {
			return nil, Header{}, fmt.Errorf("sharedobj: partition %x/%d has no batches", p.TopicID, p.Partition)
		}
		var n int64
		for _, b := range p.Batches {
			if _, err := batch.Check(b); err != nil {
				return nil, Header{}, fmt.Errorf("sharedobj: partition %x/%d: %w", p.TopicID, p.Partition, err)
			}
			n += int64(len(b))
		}
		if n > math.MaxInt32 {
			return nil, Header{}, fmt.Errorf("sharedobj: partition %x/%d has %d bytes, more than one run holds", p.TopicID, p.Partition, n)
		}
		h.Runs[i] = Run{TopicID: p.TopicID, Partition: p.Partition, Position: pos, Length: int32(n), Batches: int32(len(p.Batches))}
		pos += n
	}
	out := make([]byte, h.Size(), int64(h.Size())+pos)
	for _, p := range sorted {
		for _, b := range p.Batches {
			out = append(out, b...)
		}
	}
	h.DataCRC = crc32.Checksum(out[h.Size():], castagnoli)
	encodeHeader(out[:h.Size()], h)
	return out, h, nil
}

func comparePart(a, b Part) int {
	return cmp.Or(bytes.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
}

func encodeHeader(b []byte, h Header) {
	copy(b[0:], magic)
	binary.BigEndian.PutUint16(b[4:], version)
	binary.BigEndian.PutUint16(b[6:], 0)
	copy(b[8:], h.ID[:])
	binary.BigEndian.PutUint32(b[24:], uint32(h.Writer))
	binary.BigEndian.PutUint64(b[28:], uint64(h.CutMs))
	binary.BigEndian.PutUint32(b[36:], uint32(len(h.Runs)))
	binary.BigEndian.PutUint32(b[40:], h.DataCRC)
	at := fixedSize
	for _, r := range h.Runs {
		copy(b[at:], r.TopicID[:])
		binary.BigEndian.PutUint32(b[at+16:], uint32(r.Partition))
		binary.BigEndian.PutUint64(b[at+20:], uint64(r.Position))
		binary.BigEndian.PutUint32(b[at+28:], uint32(r.Length))
		binary.BigEndian.PutUint32(b[at+32:], uint32(r.Batches))
		at += runSize
	}
	binary.BigEndian.PutUint32(b[at:], crc32.Checksum(b[:at], castagnoli))
}

// PeekHeaderSize reads the run count from an object's first 44 bytes and
// returns how many bytes its whole header takes, so that a reader can ask
// the store for exactly that much.
func PeekHeaderSize(b []byte) (int, error) {
	if len(b) < fixedSize {
		return 0, fmt.Errorf("%w: %d bytes, a header has at least %d", ErrCorrupt, len(b), fixedSize)
	}
	if string(b[:4]) != magic {
		return 0, fmt.Errorf("%w: magic %q", ErrCorrupt, b[:4])
	}
	n := binary.BigEndian.Uint32(b[36:])
	if n > MaxRuns {
		return 0, fmt.Errorf("%w: %d runs, at most %d", ErrCorrupt, n, MaxRuns)
	}
	return HeaderSize(int(n)), nil
}

// DecodeHeader parses and checks the header at the start of b, for an
// object of objectSize bytes: magic, version, flags, the header's CRC,
// runs sorted, one per partition, tiling the data section to its end. The
// data's CRC is CheckData's.
func DecodeHeader(b []byte, objectSize int64) (Header, error) {
	size, err := PeekHeaderSize(b)
	if err != nil {
		return Header{}, err
	}
	if len(b) < size {
		return Header{}, fmt.Errorf("%w: %d bytes, the header takes %d", ErrCorrupt, len(b), size)
	}
	end := size - trailerSize
	if got, want := crc32.Checksum(b[:end], castagnoli), binary.BigEndian.Uint32(b[end:]); got != want {
		return Header{}, fmt.Errorf("%w: header crc %08x, want %08x", ErrCorrupt, got, want)
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != version {
		return Header{}, fmt.Errorf("%w: format version %d, this agent reads %d", ErrCorrupt, v, version)
	}
	if f := binary.BigEndian.Uint16(b[6:]); f != 0 {
		return Header{}, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, f)
	}
	h := Header{
		Writer:  int32(binary.BigEndian.Uint32(b[24:])),
		CutMs:   int64(binary.BigEndian.Uint64(b[28:])),
		DataCRC: binary.BigEndian.Uint32(b[40:]),
		Runs:    make([]Run, (end-fixedSize)/runSize),
	}
	copy(h.ID[:], b[8:24])
	var pos int64
	for i := range h.Runs {
		at := fixedSize + i*runSize
		r := Run{
			Partition: int32(binary.BigEndian.Uint32(b[at+16:])),
			Position:  int64(binary.BigEndian.Uint64(b[at+20:])),
			Length:    int32(binary.BigEndian.Uint32(b[at+28:])),
			Batches:   int32(binary.BigEndian.Uint32(b[at+32:])),
		}
		copy(r.TopicID[:], b[at:at+16])
		switch {
		case r.Partition < 0 || r.Length < batch.HeaderSize || r.Batches <= 0:
			return Header{}, fmt.Errorf("%w: run %d: partition %d, %d bytes, %d batches", ErrCorrupt, i, r.Partition, r.Length, r.Batches)
		case r.Position != pos:
			return Header{}, fmt.Errorf("%w: run %d starts at %d, the previous one ends at %d", ErrCorrupt, i, r.Position, pos)
		case i > 0 && compareRun(h.Runs[i-1], r) >= 0:
			return Header{}, fmt.Errorf("%w: run %d is out of order or repeats its partition", ErrCorrupt, i)
		}
		h.Runs[i] = r
		pos += int64(r.Length)
	}
	if int64(size)+pos != objectSize {
		return Header{}, fmt.Errorf("%w: header and runs make %d bytes, the object has %d", ErrCorrupt, int64(size)+pos, objectSize)
	}
	return h, nil
}

func compareRun(a, b Run) int {
	return cmp.Or(bytes.Compare(a.TopicID[:], b.TopicID[:]), cmp.Compare(a.Partition, b.Partition))
}

// CheckData checks the data section (the object from Size on) against
// the header's CRC: what the compactor and `strata verify` do before
// trusting a whole object.
func (h Header) CheckData(data []byte) error {
	if got := crc32.Checksum(data, castagnoli); got != h.DataCRC {
		return fmt.Errorf("%w: data crc %08x, want %08x", ErrCorrupt, got, h.DataCRC)
	}
	return nil
}

// Each calls fn with each batch of run r, given the run's bytes (read
// with one ranged GET), after checking its length and CRC; the batches
// must be exactly r.Batches and fill the run.
func (r Run) Each(b []byte, fn func(h batch.Header, raw []byte) error) error {
	if len(b) != int(r.Length) {
		return fmt.Errorf("%w: run of %x/%d is %d bytes, read %d", ErrCorrupt, r.TopicID, r.Partition, r.Length, len(b))
	}
	n := int32(0)
	if _, err := batch.Split(b, func(h batch.Header, raw []byte) error {
		n++
		return fn(h, raw)
	}); err != nil {
		if errors.Is(err, batch.ErrShort) || errors.Is(err, batch.ErrCorrupt) || errors.Is(err, batch.ErrMagic) {
			return fmt.Errorf("%w: run of %x/%d: %w", ErrCorrupt, r.TopicID, r.Partition, err)
		}
		return err
	}
	if n != r.Batches {
		return fmt.Errorf("%w: run of %x/%d holds %d batches, its header says %d", ErrCorrupt, r.TopicID, r.Partition, n, r.Batches)
	}
	return nil
}
