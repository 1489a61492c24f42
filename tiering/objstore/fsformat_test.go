package objstore

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// fsSum is data's checksum in the current format.
func fsSum(data []byte) []byte {
	h := newFSChecksum()
	h.Write(data)
	return h.Sum(nil)
}

func TestFSHeaderRoundTrip(t *testing.T) {
	data := []byte("payload")
	h, err := newFSHeader(int64(len(data)), fsSum(data))
	if err != nil {
		t.Fatal(err)
	}
	if !h.matches(data) || h.matches([]byte("paylaod")) {
		t.Fatalf("checksum of %q: matches itself %v, matches other bytes %v", data, h.matches(data), h.matches([]byte("paylaod")))
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
		"padding":  func(b []byte) ([]byte, int64) { b[40] = 1; return b, int64(fsHeaderSize + len(data)) },
		"length":   func(b []byte) ([]byte, int64) { return b, int64(fsHeaderSize + len(data) + 1) },
	} {
		b, size := mutate(h.encode())
		if _, reason := decodeFSHeader(b, size); reason == "" {
			t.Errorf("%s: corrupt header accepted", name)
		}
	}
}

// Objects written in the first format, whose checksum is a SHA-256, are
// still read, and still verified: a bucket written by an older agent stays
// readable after an upgrade.
func TestFSReadsFormatOne(t *testing.T) {
	dir := t.TempDir()
	b, err := NewFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	data := []byte("written by an older agent")
	h := fsHeader{version: fsFormatSHA256, length: uint64(len(data)), checksum: sha256.Sum256(data)}
	h.versionID[0] = 7
	path := filepath.Join(dir, "old")
	if err := os.WriteFile(path, append(h.encode(), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	got, attrs, err := b.Get(t.Context(), "old")
	if err != nil || !bytes.Equal(got, data) || attrs.ETag != h.etag() {
		t.Fatalf("Get of a format 1 object = %q %+v %v, want %q with ETag %s", got, attrs, err, data, h.etag())
	}
	raw := append(h.encode(), data...)
	raw[len(raw)-1] ^= 1
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(t.Context(), "old"); !IsCorrupt(err) {
		t.Fatalf("Get of a changed format 1 object: %v, want corruption", err)
	}
}

// FuzzDecodeFSHeader: any bytes from disk are rejected or decoded, never a
// panic, and whatever decodes re-encodes to the same bytes.
func FuzzDecodeFSHeader(f *testing.F) {
	h, err := newFSHeader(4, fsSum([]byte("seed")))
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
