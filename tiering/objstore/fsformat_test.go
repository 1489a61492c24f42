package objstore

import (
	"bytes"
	"crypto/sha256"
	"testing"
)

func TestFSHeaderRoundTrip(t *testing.T) {
	data := []byte("payload")
	h, err := newFSHeader(int64(len(data)), sha256.Sum256(data))
	if err != nil {
		t.Fatal(err)
	}
	got, reason := decodeFSHeader(h.encode(), int64(fsHeaderSize+len(data)))
	if reason != "" || got != h {
		t.Fatalf("decode = %+v %q, want %+v", got, reason, h)
	}
	if len(h.etag()) != 32 {
		t.Fatalf("etag %q is not 32 hex digits", h.etag())
	}
	for name, mutate := range map[string]func([]byte) ([]byte, int64){
		"short":    func(b []byte) ([]byte, int64) { return b[:10], 10 },
		"magic":    func(b []byte) ([]byte, int64) { b[0] = 'X'; return b, int64(fsHeaderSize + len(data)) },
		"version":  func(b []byte) ([]byte, int64) { b[4] = 9; return b, int64(fsHeaderSize + len(data)) },
		"reserved": func(b []byte) ([]byte, int64) { b[6] = 1; return b, int64(fsHeaderSize + len(data)) },
		"length":   func(b []byte) ([]byte, int64) { return b, int64(fsHeaderSize + len(data) + 1) },
	} {
		b, size := mutate(h.encode())
		if _, reason := decodeFSHeader(b, size); reason == "" {
			t.Errorf("%s: corrupt header accepted", name)
		}
	}
}

// FuzzDecodeFSHeader: any bytes from disk are rejected or decoded, never a
// panic, and whatever decodes re-encodes to the same bytes.
func FuzzDecodeFSHeader(f *testing.F) {
	h, err := newFSHeader(4, sha256.Sum256([]byte("seed")))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(h.encode(), int64(fsHeaderSize+4))
	f.Add([]byte{}, int64(0))
	f.Add([]byte("STOB\x01\x00\x00\x00"), int64(8))
	f.Add(bytes.Repeat([]byte{0xff}, fsHeaderSize), int64(-1))
	f.Fuzz(func(t *testing.T, b []byte, fileSize int64) {
		got, reason := decodeFSHeader(b, fileSize)
		if reason != "" {
			return
		}
		if !bytes.Equal(got.encode(), b[:fsHeaderSize]) {
			t.Fatalf("decoded header re-encodes differently")
		}
		if int64(got.length) != fileSize-fsHeaderSize {
			t.Fatalf("accepted length %d for file size %d", got.length, fileSize)
		}
	})
}
