package sharedobj

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log/batch"
)

func mkBatch(t testing.TB, value string, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte(value)}
	}
	b, err := batch.Build(batch.DefaultBuildOptions(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func topic(b byte) (id [16]byte) {
	id[0] = b
	return id
}

func TestEncodeDecode(t *testing.T) {
	id, err := NewID(time.UnixMilli(1_765_000_000_123))
	if err != nil {
		t.Fatal(err)
	}
	a1, a2, b1, c1 := mkBatch(t, "a1", 2), mkBatch(t, "a2", 1), mkBatch(t, "b1", 3), mkBatch(t, "c1", 1)
	// Given out of order: runs come out sorted by (topic id, partition),
	// each partition's batches in the order given.
	obj, h, err := Encode(id, 7, 1_765_000_000_123, []Part{
		{TopicID: topic(2), Partition: 0, Batches: [][]byte{c1}},
		{TopicID: topic(1), Partition: 5, Batches: [][]byte{b1}},
		{TopicID: topic(1), Partition: 0, Batches: [][]byte{a1, a2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHeader(obj, int64(len(obj)))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Writer != 7 || got.CutMs != 1_765_000_000_123 || got.DataCRC != h.DataCRC || len(got.Runs) != 3 {
		t.Fatalf("decoded %+v, encoded %+v", got, h)
	}
	want := []struct {
		topic byte
		part  int32
		data  []byte
		n     int32
	}{{1, 0, append(append([]byte{}, a1...), a2...), 2}, {1, 5, b1, 1}, {2, 0, c1, 1}}
	data := obj[got.Size():]
	if err := got.CheckData(data); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		r := got.Runs[i]
		if r.TopicID != topic(w.topic) || r.Partition != w.part || r.Batches != w.n {
			t.Fatalf("run %d = %+v, want topic %d partition %d with %d batches", i, r, w.topic, w.part, w.n)
		}
		run := data[r.Position : r.Position+int64(r.Length)]
		if !bytes.Equal(run, w.data) {
			t.Fatalf("run %d's bytes differ from the batches given", i)
		}
		seen := int32(0)
		if err := r.Each(run, func(batch.Header, []byte) error { seen++; return nil }); err != nil || seen != w.n {
			t.Fatalf("run %d: Each saw %d batches, %v", i, seen, err)
		}
	}
	if size, err := PeekHeaderSize(obj[:fixedSize]); err != nil || size != got.Size() {
		t.Fatalf("PeekHeaderSize = %d, %v; want %d", size, err, got.Size())
	}
}

func TestEncodeRefuses(t *testing.T) {
	b := mkBatch(t, "x", 1)
	bad := append([]byte{}, b...)
	bad[len(bad)-1] ^= 1
	for name, parts := range map[string][]Part{
		"twice":      {{TopicID: topic(1), Batches: [][]byte{b}}, {TopicID: topic(1), Batches: [][]byte{b}}},
		"no batches": {{TopicID: topic(1)}},
		"bad crc":    {{TopicID: topic(1), Batches: [][]byte{bad}}},
		"short":      {{TopicID: topic(1), Batches: [][]byte{b[:30]}}},
	} {
		if _, _, err := Encode(ID{}, 0, 0, parts); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

// Every change to an object is refused by DecodeHeader, CheckData or
// Each, never returned as good data.
func TestCorruptObjects(t *testing.T) {
	obj, h, err := Encode(ID{1}, 1, 2, []Part{
		{TopicID: topic(1), Batches: [][]byte{mkBatch(t, "one", 2)}},
		{TopicID: topic(1), Partition: 1, Batches: [][]byte{mkBatch(t, "two", 1), mkBatch(t, "three", 1)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	refused := func(o []byte) error {
		got, err := DecodeHeader(o, int64(len(o)))
		if err != nil {
			return err
		}
		if err := got.CheckData(o[got.Size():]); err != nil {
			return err
		}
		for _, r := range got.Runs {
			data := o[got.Size():]
			if err := r.Each(data[r.Position:r.Position+int64(r.Length)], func(batch.Header, []byte) error { return nil }); err != nil {
				return err
			}
		}
		return nil
	}
	for at := range obj {
		o := bytes.Clone(obj)
		o[at] ^= 0x10
		if err := refused(o); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d changed: %v, want ErrCorrupt", at, err)
		}
	}
	// A header rewritten with a good CRC but bad fields.
	reseal := func(mutate func(b []byte)) []byte {
		o := bytes.Clone(obj)
		mutate(o)
		end := h.Size() - trailerSize
		binary.BigEndian.PutUint32(o[end:], crc32.Checksum(o[:end], castagnoli))
		return o
	}
	for name, o := range map[string][]byte{
		"version":   reseal(func(b []byte) { b[5] = 2 }),
		"flags":     reseal(func(b []byte) { b[7] = 1 }),
		"order":     reseal(func(b []byte) { binary.BigEndian.PutUint32(b[fixedSize+runSize+16:], 0) }),
		"gap":       reseal(func(b []byte) { binary.BigEndian.PutUint64(b[fixedSize+runSize+20:], 1) }),
		"count":     reseal(func(b []byte) { binary.BigEndian.PutUint32(b[fixedSize+32:], 2) }),
		"truncated": obj[:len(obj)-1],
		"header":    obj[:h.Size()-1],
	} {
		if err := refused(o); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := PeekHeaderSize(append([]byte("SDLO"), make([]byte, fixedSize-4)...)); err != nil {
		t.Fatalf("a zero-run prefix: %v", err)
	}
	huge := bytes.Clone(obj[:fixedSize])
	binary.BigEndian.PutUint32(huge[36:], MaxRuns+1)
	if _, err := PeekHeaderSize(huge); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("run count past MaxRuns: %v", err)
	}
}

func TestIDsAndKeys(t *testing.T) {
	at := time.UnixMilli(1_765_000_000_999)
	a, err := NewID(at)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewID(at.Add(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !a.Time().Equal(at) || a[6]>>4 != 7 || a[8]>>6 != 2 {
		t.Fatalf("id %s: time %v (want %v), version %d, variant %d", a, a.Time(), at, a[6]>>4, a[8]>>6)
	}
	if a == b || !(a.Key() < b.Key()) {
		t.Fatalf("keys %s and %s: a later cut must sort later", a.Key(), b.Key())
	}
	if got, ok := ParseKey(a.Key()); !ok || got != a {
		t.Fatalf("ParseKey(%s) = %s, %v", a.Key(), got, ok)
	}
	for _, k := range []string{"diskless/objects/x.obj", "topics/" + a.String() + ".obj", strings.ToUpper(a.Key()), KeyPrefix + a.String()} {
		if _, ok := ParseKey(k); ok {
			t.Errorf("ParseKey(%q) accepted", k)
		}
	}
}

// FuzzDecodeHeader: any bytes are refused or decoded, never a panic, and
// a decoded header encodes back to the same bytes.
func FuzzDecodeHeader(f *testing.F) {
	obj, _, err := Encode(ID{9}, 3, 4, []Part{{TopicID: topic(1), Batches: [][]byte{mkBatch(f, "seed", 1)}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(obj, int64(len(obj)))
	f.Add(obj[:fixedSize], int64(fixedSize))
	f.Add([]byte("SDLO"), int64(-1))
	f.Fuzz(func(t *testing.T, b []byte, size int64) {
		h, err := DecodeHeader(b, size)
		if err != nil {
			return
		}
		again := make([]byte, h.Size())
		encodeHeader(again, h)
		if !bytes.Equal(again, b[:h.Size()]) {
			t.Fatalf("decoded header re-encodes differently")
		}
	})
}
