package batch

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestVarintRoundTrip(t *testing.T) {
	rng := newRand(t)
	vals := []int64{0, 1, -1, 63, -64, 64, -65, math.MaxInt32, math.MinInt32}
	for range 1000 {
		vals = append(vals, int64(int32(rng.Uint32())))
	}
	for _, x := range vals {
		b := appendVarint(nil, x)
		if len(b) != varintSize(x) {
			t.Fatalf("%d: size %d, encoded %d", x, varintSize(x), len(b))
		}
		// encoding/binary's Varint is the same zig-zag scheme.
		if y, n := binary.Varint(b); y != x || n != len(b) {
			t.Fatalf("%d: binary.Varint reads %d (%d bytes)", x, y, n)
		}
		if y, p, ok := readVarint(b, 0); !ok || int64(y) != x || p != len(b) {
			t.Fatalf("%d: readVarint %d %d %v", x, y, p, ok)
		}
	}
	for _, x := range append(vals, math.MaxInt64, math.MinInt64, 1<<40, -1<<50) {
		b := appendVarint(nil, x)
		if y, p, ok := readVarlong(b, 0); !ok || y != x || p != len(b) {
			t.Fatalf("%d: readVarlong %d %d %v", x, y, p, ok)
		}
	}
}

func TestVarintRejects(t *testing.T) {
	for _, b := range [][]byte{
		{},
		{0x80},                         // ends mid-varint
		{0x80, 0x80, 0x80, 0x80, 0x10}, // 33 bits
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
		appendVarint(nil, math.MaxInt32+1),
	} {
		if _, _, ok := readVarint(b, 0); ok {
			t.Errorf("readVarint accepted % x", b)
		}
	}
	for _, b := range [][]byte{
		{0xff},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, // 65 bits
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00},
	} {
		if _, _, ok := readVarlong(b, 0); ok {
			t.Errorf("readVarlong accepted % x", b)
		}
	}
}
