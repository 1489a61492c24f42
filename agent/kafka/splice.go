package kafka

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// spliceMinBytes is the record bytes from which a Fetch answer is written
// around its record batches instead of encoded with them: below it the
// copy costs less than the extra writes.
const spliceMinBytes = 64 << 10

// markerBytes is the size of the stand-in for one partition's batches:
// 12 random bytes per answer and the partition's 4-byte index.
const markerBytes = 16

// writeFetchSpliced writes a Fetch answer whose record batches total at
// least spliceMinBytes without copying them into the encoded answer: each
// partition's batches are swapped for a marker, the rest is encoded, and
// the batches are written from the slices the log read into, between the
// encoded pieces. This saves a copy of every byte served (and the growth
// of the encoding buffer up to the answer's size). ok is false when the
// answer is too small to be worth it, or if a marker could not be found
// (never expected: then nothing was written and the caller encodes).
func writeFetchSpliced(w io.Writer, header []byte, version int16, resp *kmsg.FetchResponse) (ok bool, err error) {
	var parts [][]byte
	total := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if b := resp.Topics[ti].Partitions[pi].RecordBatches; len(b) > 0 {
				parts = append(parts, b)
				total += len(b)
			}
		}
	}
	if total < spliceMinBytes {
		return false, nil
	}
	var seed [12]byte
	binary.LittleEndian.PutUint64(seed[:], rand.Uint64())
	binary.LittleEndian.PutUint32(seed[8:], rand.Uint32())
	markers := make([]byte, len(parts)*markerBytes)
	i := 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			fp := &resp.Topics[ti].Partitions[pi]
			if len(fp.RecordBatches) == 0 {
				continue
			}
			m := markers[i*markerBytes : (i+1)*markerBytes]
			copy(m, seed[:])
			binary.BigEndian.PutUint32(m[12:], uint32(i))
			fp.RecordBatches = m
			i++
		}
	}
	resp.SetVersion(version)
	enc := resp.AppendTo(header)
	// Put the batches back: the answer is the caller's.
	i = 0
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if fp := &resp.Topics[ti].Partitions[pi]; len(fp.RecordBatches) > 0 {
				fp.RecordBatches = parts[i]
				i++
			}
		}
	}

	// Cut the encoding at each marker and its length prefix: an int32
	// before v12, a compact (uvarint length+1) prefix from v12 on.
	flexible := resp.IsFlexible()
	prefixLen := 4
	if flexible {
		prefixLen = len(kbin.AppendUvarint(nil, markerBytes+1))
	}
	pieces := make([][]byte, 0, 3*len(parts)+1)
	size := len(enc) - 4 // the frame's length excludes its own prefix
	pos := 0
	for i := range parts {
		m := markers[i*markerBytes : (i+1)*markerBytes]
		at := bytes.Index(enc[pos:], m)
		if at < prefixLen {
			return false, nil
		}
		at += pos
		var prefix []byte
		if flexible {
			prefix = kbin.AppendUvarint(nil, uint32(len(parts[i])+1))
		} else {
			prefix = kbin.AppendInt32(nil, int32(len(parts[i])))
		}
		pieces = append(pieces, enc[pos:at-prefixLen], prefix, parts[i])
		size += len(prefix) - prefixLen + len(parts[i]) - markerBytes
		pos = at + markerBytes
	}
	pieces = append(pieces, enc[pos:])
	binary.BigEndian.PutUint32(enc[:4], uint32(size))
	for _, p := range pieces {
		if _, err := w.Write(p); err != nil {
			return true, err
		}
	}
	return true, nil
}
