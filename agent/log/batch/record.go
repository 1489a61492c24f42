package batch

// Records inside a batch (v2 record format, after decompression):
//
//	varint    length          bytes that follow, up to the next record
//	int8      attributes      unused by Kafka; kept as sent
//	varlong   timestampDelta  from the batch's baseTimestamp
//	varint    offsetDelta     from the batch's baseOffset
//	varint    keyLength       -1 for a null key
//	bytes     key
//	varint    valueLength     -1 for a null value
//	bytes     value
//	varint    headerCount
//	headers   headerCount times:
//	            varint keyLength (never negative), bytes key,
//	            varint valueLength (-1 null), bytes value

// minRecordBody is the smallest possible record after its length varint:
// attributes plus five one-byte varints (zero deltas, null key and value, no
// headers). It lets a walker bound counts before believing them.
const minRecordBody = 6

// minRecordSize is minRecordBody plus a one-byte length.
const minRecordSize = minRecordBody + 1

// minHeaderSize is an empty header key plus a null value.
const minHeaderSize = 2

// RecordHeader is one record header. A nil Value is a null value; keys
// cannot be null in Kafka.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one decoded record. Key and Value are nil for null (length -1)
// and non-nil, possibly empty, otherwise.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte
	Headers        []RecordHeader
}

// bytesLen is the wire length of a nullable byte field.
func bytesLen(b []byte) int64 {
	if b == nil {
		return -1
	}
	return int64(len(b))
}

// bodySize is the size of r after its length varint.
func (r *Record) bodySize() int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(r.OffsetDelta))
	n += varintSize(bytesLen(r.Key)) + len(r.Key)
	n += varintSize(bytesLen(r.Value)) + len(r.Value)
	n += varintSize(int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += varintSize(int64(len(h.Key))) + len(h.Key)
		n += varintSize(bytesLen(h.Value)) + len(h.Value)
	}
	return n
}

// AppendRecord appends r in the v2 record encoding, length prefix included.
// It writes exactly the fields given and checks nothing.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = appendVarint(dst, int64(r.bodySize()))
	dst = append(dst, byte(r.Attributes))
	dst = appendVarint(dst, r.TimestampDelta)
	dst = appendVarint(dst, int64(r.OffsetDelta))
	dst = appendVarint(dst, bytesLen(r.Key))
	dst = append(dst, r.Key...)
	dst = appendVarint(dst, bytesLen(r.Value))
	dst = append(dst, r.Value...)
	dst = appendVarint(dst, int64(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = appendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendVarint(dst, bytesLen(h.Value))
		dst = append(dst, h.Value...)
	}
	return dst
}

// recordReader walks the records section of a batch in place. Each call to
// next checks one record's framing completely: every length is bounded by
// the record's own length prefix, so a malformed record is reported as that
// record's error and never reads into its neighbour.
type recordReader struct {
	b     []byte
	pos   int
	index int
}

// done reports whether every byte has been consumed.
func (r *recordReader) done() bool { return r.pos == len(r.b) }

// next decodes the record at the current position into rec. Key and Value
// alias the records section. Headers are decoded into rec.Headers only when
// collect is set; otherwise they are only checked, which allocates nothing.
func (r *recordReader) next(rec *Record, collect bool) error {
	start := r.pos
	length, p, ok := readVarint(r.b, start)
	if !ok {
		return recordErr(r.index, start, "truncated or malformed record length")
	}
	if length < minRecordBody || int(length) > len(r.b)-p {
		return recordErr(r.index, start, "record length out of bounds")
	}
	end := p + int(length)
	b := r.b[:end] // no field may read past its record
	rec.Attributes = int8(b[p])
	p++
	if rec.TimestampDelta, p, ok = readVarlong(b, p); !ok {
		return recordErr(r.index, p, "malformed timestamp delta")
	}
	if rec.OffsetDelta, p, ok = readVarint(b, p); !ok {
		return recordErr(r.index, p, "malformed offset delta")
	}
	if rec.Key, p, ok = readNullableBytes(b, p); !ok {
		return recordErr(r.index, p, "malformed key length")
	}
	if rec.Value, p, ok = readNullableBytes(b, p); !ok {
		return recordErr(r.index, p, "malformed value length")
	}
	count, p, ok := readVarint(b, p)
	if !ok || count < 0 || int(count) > (end-p)/minHeaderSize {
		return recordErr(r.index, p, "malformed header count")
	}
	rec.Headers = nil
	if collect && count > 0 {
		rec.Headers = make([]RecordHeader, count)
	}
	for i := 0; i < int(count); i++ {
		var klen int32
		if klen, p, ok = readVarint(b, p); !ok || klen < 0 || int(klen) > end-p {
			return recordErr(r.index, p, "malformed header key length")
		}
		key := b[p : p+int(klen)]
		p += int(klen)
		var value []byte
		if value, p, ok = readNullableBytes(b, p); !ok {
			return recordErr(r.index, p, "malformed header value length")
		}
		if collect {
			rec.Headers[i] = RecordHeader{Key: string(key), Value: value}
		}
	}
	if p != end {
		return recordErr(r.index, p, "record length does not match its fields")
	}
	r.pos = end
	r.index++
	return nil
}

// readNullableBytes reads a varint length (-1 for null) and that many bytes.
// The result's capacity is clipped so that appending to it cannot overwrite
// the bytes that follow.
func readNullableBytes(b []byte, pos int) ([]byte, int, bool) {
	n, p, ok := readVarint(b, pos)
	if !ok || n < -1 || int(n) > len(b)-p {
		return nil, p, false
	}
	if n == -1 {
		return nil, p, true
	}
	end := p + int(n)
	return b[p:end:end], end, true
}
