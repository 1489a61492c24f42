package producers

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// testState is two producers, one with kept batches, one without.
func testState() *State {
	s := New()
	s.m[3] = &Producer{ID: 3, Epoch: 2, LastTimestamp: 99, TxnFirst: -1, CoordinatorEpoch: -1,
		Batches: []Batch{{1, 2, 10, 11}, {3, 3, 12, 12}}}
	s.m[1] = &Producer{ID: 1, Epoch: 0, LastTimestamp: -1, TxnFirst: 7, CoordinatorEpoch: 2}
	s.open[1] = 7
	return s
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := testState()
	b := s.Encode(42)
	off, got, err := Decode(b, true)
	if err != nil || off != 42 || len(got.m) != 2 || got.m[3].Batches[1] != s.m[3].Batches[1] || got.m[3].Epoch != 2 {
		t.Fatalf("round trip: %d %+v %v", off, got, err)
	}
	if got.FirstUnstable() != 7 || got.m[1].CoordinatorEpoch != 2 {
		t.Fatalf("round trip lost the open transaction: %+v", got.m[1])
	}
	if again := got.Encode(42); !bytes.Equal(again, b) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", again, b)
	}
	for n := range b {
		if _, _, err := Decode(b[:n], true); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("truncated to %d: %v", n, err)
		}
	}
}

// encodeV1 writes the layout from before transactions, which only tests
// need to write.
func encodeV1(t testing.TB, s *State, offset int64) []byte {
	p := s.Encode(offset)
	v1 := append([]byte(nil), p[:12]...)
	for p = p[12:]; len(p) > 0; {
		if txnFirst := int64(binary.BigEndian.Uint64(p[producerBytes:])); txnFirst != -1 {
			t.Fatalf("v1 cannot hold an open transaction (%d)", txnFirst)
		}
		k := int(p[producerBytes+transactionBytes])
		v1 = append(v1, p[:producerBytes]...)
		v1 = append(v1, p[producerBytes+transactionBytes:producerBytes+transactionBytes+1+k*batchBytes]...)
		p = p[producerBytes+transactionBytes+1+k*batchBytes:]
	}
	return v1
}

// A snapshot from before transactions still loads, with nothing open.
func TestSnapshotV1(t *testing.T) {
	s := New()
	h := batch.Header{ProducerID: 5, ProducerEpoch: 1, BaseSequence: 0, BaseOffset: 10, LastOffsetDelta: 1, MaxTimestamp: 7}
	s.Update(&h, batch.Marker{Type: -1})
	cur := s.Encode(12)
	// The V1 layout is the current one without the two transaction fields
	// (8+4 bytes after the last timestamp).
	entry := 12 + 8 + 2 + 8
	v1 := append(append([]byte(nil), cur[:entry]...), cur[entry+12:]...)
	if !bytes.Equal(v1, encodeV1(t, s, 12)) {
		t.Fatal("encodeV1 disagrees")
	}
	off, got, err := Decode(v1, false)
	if err != nil || off != 12 {
		t.Fatalf("decode v1: offset %d, %v", off, err)
	}
	e := got.m[5]
	if e == nil || e.Epoch != 1 || e.TxnFirst != -1 || e.CoordinatorEpoch != -1 || len(e.Batches) != 1 || e.Batches[0].FirstOffset != 10 {
		t.Fatalf("v1 entry %+v", e)
	}
	if _, _, err := Decode(v1, true); err == nil {
		t.Fatal("a v1 payload decoded as the current layout")
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := testState().Encode(42)
	at := func(b []byte, off int, v ...byte) []byte {
		c := append([]byte(nil), b...)
		copy(c[off:], v)
		return c
	}
	// Producer 1 is first: its entry starts at 12, producer 3's at 12+31.
	second := 12 + producerBytes + transactionBytes + 1
	for _, c := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"negative offset", at(good, 0, 0x80)},
		{"count above the bound", at(good, 8, 0, 0x40, 0, 1)},
		{"count above the entries", at(good, 8, 0, 0, 0, 3)},
		{"trailing bytes", append(append([]byte(nil), good...), 0)},
		{"negative producer id", at(good, 12, 0x80)},
		{"ids out of order", at(good, second, 0, 0, 0, 0, 0, 0, 0, 0)},
		{"a repeated id", at(good, second, 0, 0, 0, 0, 0, 0, 0, 1)},
		{"open transaction below -1", at(good, 12+producerBytes, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe)},
		{"more batches than kept", at(good, second+producerBytes+transactionBytes, BatchesKept+1)},
	} {
		if _, _, err := Decode(c.p, true); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: %v, want ErrBadSnapshot", c.name, err)
		}
	}
	if _, _, err := Decode(good, true); err != nil {
		t.Fatalf("the unchanged payload: %v", err)
	}
}
