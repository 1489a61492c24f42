package batch

import (
	"fmt"
	"sync"
)

// Decompressed records sections are built in pooled buffers so that
// validating a compressed batch allocates nothing in the steady state.
// Buffers that grew past poolRetainMax are dropped instead of pooled, so one
// huge batch does not pin its memory for ever.
const (
	poolBufferSize = 64 << 10
	poolRetainMax  = 8 << 20
)

var sectionBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, poolBufferSize)
	return &b
}}

// openBatch is one whole batch opened for reading its records: framing
// (length, CRC, magic) and codec checked, records decompressed.
//
// Callers walk records with a recordReader over records, then call
// finish to check that nothing follows the last one, and release. (A
// callback-style walker would be tidier, but passing the header and record
// to a func value moves both to the heap, and Validate must not allocate.)
type openBatch struct {
	header  Header
	records []byte
	pooled  *[]byte // the pooled buffer behind records, if any
}

// open checks raw and prepares its records. With owned set, a compressed
// section is decompressed into a fresh slice that the records may alias
// for ever; otherwise into a pooled buffer that release returns.
func (ob *openBatch) open(raw []byte, maxDecompressed int, owned bool) error {
	h, err := Check(raw)
	ob.header = h
	if err != nil {
		return err
	}
	c := h.Codec()
	if !c.Valid() {
		return fmt.Errorf("%w: codec id %d", ErrUnsupportedCodec, c)
	}
	ob.records = raw[HeaderSize:]
	if c == CodecNone {
		return nil
	}
	limit := limitOrDefault(maxDecompressed)
	if owned {
		ob.records, err = Decompress(c, ob.records, limit)
		return err
	}
	ob.pooled = sectionBuffers.Get().(*[]byte)
	*ob.pooled, err = decompressAppend((*ob.pooled)[:0], c, ob.records, limit)
	ob.records = *ob.pooled
	return err
}

// release returns the pooled buffer, after which records must not be used.
func (ob *openBatch) release() {
	if ob.pooled != nil && cap(*ob.pooled) <= poolRetainMax {
		sectionBuffers.Put(ob.pooled)
	}
	ob.pooled, ob.records = nil, nil
}

// reader starts a walk over the records.
func (ob *openBatch) reader() recordReader { return recordReader{b: ob.records} }

// finish checks, after RecordCount records were read, that no bytes remain:
// a header that counts fewer records than were sent is as wrong as one
// that counts more.
func (ob *openBatch) finish(rr *recordReader) error {
	if rr.done() {
		return nil
	}
	return recordErr(rr.index, rr.pos, fmt.Sprintf("%d bytes after the %d records the header counts",
		len(rr.b)-rr.pos, ob.header.RecordCount))
}

// Records decodes every record of raw, one whole batch. The batch's CRC and
// framing are checked; its offset deltas and timestamps are not (that is
// Validate's job), and control batches decode like any other. For an
// uncompressed batch, keys and values alias raw; for a compressed one they
// alias a fresh buffer. maxDecompressed bounds the decompressed records
// (<= 0 means DefaultMaxDecompressed).
func Records(raw []byte, maxDecompressed int) (Header, []Record, error) {
	var ob openBatch
	if err := ob.open(raw, maxDecompressed, true); err != nil {
		return ob.header, nil, err
	}
	h := ob.header
	// Never trust the claimed count for an allocation: each record takes at
	// least minRecordSize bytes.
	recs := make([]Record, 0, min(int(h.RecordCount), len(ob.records)/minRecordSize))
	rr := ob.reader()
	for range h.RecordCount {
		var rec Record
		if err := rr.next(&rec, true); err != nil {
			return h, nil, err
		}
		recs = append(recs, rec)
	}
	if err := ob.finish(&rr); err != nil {
		return h, nil, err
	}
	return h, recs, nil
}
