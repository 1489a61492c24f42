package batch

// Cross-checks against franz-go's independent encoders and codecs: what
// franz-go writes we read, and what we write franz-go reads.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var kgoCodecs = map[Codec]kgo.CompressionCodec{
	CodecGzip:   kgo.GzipCompression(),
	CodecSnappy: kgo.SnappyCompression(),
	CodecLZ4:    kgo.Lz4Compression(),
	CodecZstd:   kgo.ZstdCompression(),
}

func toKmsg(r Record) kmsg.Record {
	k := kmsg.Record{
		Attributes:       r.Attributes,
		TimestampDelta64: r.TimestampDelta,
		OffsetDelta:      r.OffsetDelta,
		Key:              r.Key,
		Value:            r.Value,
	}
	for _, h := range r.Headers {
		k.Headers = append(k.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
	}
	// kmsg wants the body length filled in: encoded with Length 0 (one
	// varint byte), the record is that byte plus the body.
	k.Length = int32(len(k.AppendTo(nil)) - 1)
	return k
}

func fromKmsg(k kmsg.Record) Record {
	r := Record{
		Attributes:     k.Attributes,
		TimestampDelta: k.TimestampDelta64,
		OffsetDelta:    k.OffsetDelta,
		Key:            k.Key,
		Value:          k.Value,
	}
	for _, h := range k.Headers {
		r.Headers = append(r.Headers, RecordHeader{Key: h.Key, Value: h.Value})
	}
	return r
}

func TestRecordEncodingMatchesKmsg(t *testing.T) {
	rng := newRand(t)
	recs := randRecords(rng, 300, 200)
	recs = append(recs, Record{OffsetDelta: 1 << 20, TimestampDelta: -5, Value: bytes.Repeat([]byte("v"), 70000)})
	for i, r := range recs {
		ours := AppendRecord(nil, &r)
		k := toKmsg(r)
		theirs := k.AppendTo(nil)
		if !bytes.Equal(ours, theirs) {
			t.Fatalf("record %d encodes differently:\n ours % x\ntheirs % x", i, ours, theirs)
		}
		var back kmsg.Record
		if err := back.ReadFrom(ours); err != nil {
			t.Fatalf("kmsg cannot read record %d: %v", i, err)
		}
		if got := fromKmsg(back); !equalRecord(got, r) {
			t.Fatalf("record %d: kmsg read %+v, want %+v", i, got, r)
		}
	}
}

// equalRecord compares records by their wire form, so that the check does
// not depend on whether kmsg decodes an empty field as nil or empty (null
// and empty still differ on the wire).
func equalRecord(a, b Record) bool {
	return bytes.Equal(AppendRecord(nil, &a), AppendRecord(nil, &b))
}

// kmsgBatch encodes records the way franz-go's producer does: kmsg framing,
// records compressed by kgo's own compressor.
func kmsgBatch(t *testing.T, c Codec, recs []Record) []byte {
	t.Helper()
	var section []byte
	for _, r := range recs {
		k := toKmsg(r)
		section = k.AppendTo(section)
	}
	if c != CodecNone {
		comp, err := kgo.DefaultCompressor(kgoCodecs[c])
		if err != nil {
			t.Fatal(err)
		}
		out, used := comp.Compress(new(bytes.Buffer), section)
		if used != kgo.CompressionCodecType(c) {
			t.Fatalf("kgo compressed with %d, want %v", used, c)
		}
		section = bytes.Clone(out)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(c),
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       1_700_000_000_000,
		MaxTimestamp:         1_700_000_000_000,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              section,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func TestReadFranzBatches(t *testing.T) {
	rng := newRand(t)
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			recs := randRecords(rng, 400, 400)
			raw := kmsgBatch(t, c, recs)
			if _, err := Validate(raw, ValidateOptions{}); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			_, got, err := Records(raw, 0)
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			equalRecords(t, got, recs)
		})
	}
}

func TestFranzReadsOurBatches(t *testing.T) {
	rng := newRand(t)
	dec := kgo.DefaultDecompressor()
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			recs := randRecords(rng, 400, 400)
			raw := mustBuild(t, buildOpts(c), recs)
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw); err != nil {
				t.Fatalf("kmsg: %v", err)
			}
			if int(b.Length)+12 != len(raw) || uint32(b.CRC) != crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)) {
				t.Fatalf("kmsg sees length %d crc %08x", b.Length, uint32(b.CRC))
			}
			section, err := dec.Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&7))
			if err != nil {
				t.Fatalf("kgo decompress: %v", err)
			}
			for i := 0; i < int(b.NumRecords); i++ {
				l, n := binary.Varint(section)
				if n <= 0 || int(l) > len(section)-n {
					t.Fatalf("record %d: bad length", i)
				}
				var k kmsg.Record
				if err := k.ReadFrom(section[:n+int(l)]); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if got := fromKmsg(k); !equalRecord(got, recs[i]) {
					t.Fatalf("record %d: %s", i, fmt.Sprintf("%+v != %+v", got, recs[i]))
				}
				section = section[n+int(l):]
			}
			if len(section) != 0 {
				t.Fatalf("%d bytes left", len(section))
			}
		})
	}
}
