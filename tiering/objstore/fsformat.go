package objstore

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
)

// The fs backend stores each object as one file: a fixed header followed by
// the object's bytes exactly as the caller gave them.
//
//	offset size field
//	     0    4 magic "STOB"
//	     4    1 format version (2; 1 is still read)
//	     5    3 reserved, zero
//	     8    8 content length in bytes, big-endian uint64
//	    16   16 version id: random, new on every Put; the ETag is its hex
//	    32   32 checksum of the content: version 2, its CRC-32C (Castagnoli)
//	            big-endian in the first 4 bytes and zeros after; version 1,
//	            its SHA-256
//	    64    n content
//
// Why a header rather than bare files: the ETag must be stable across
// processes, cheap to read (Stat and List must not hash gigabyte segments)
// and new on every Put (so IfMatch means "nobody wrote since I read"). A
// random id written inside the file is replaced in the same rename as the
// content, so ETag and content can never disagree. The checksum lets Get
// detect bytes the disk lost or changed.
//
// Why CRC-32C since version 2: the checksum guards against a disk's lost
// or changed bytes, not against an adversary, which a CRC detects as well
// as a cryptographic hash does, and the CPU computes it about ten times
// faster. Every segment upload hashes the whole segment: with SHA-256 the
// upload of a sealed 1 GiB segment took a quarter of a 2-core agent's CPU
// away from its producers (benchmarks/README.md). Kafka's record batches
// and S3's own checksums use the same CRC.
const (
	fsHeaderSize    = 64
	fsFormatVersion = 2
	fsMagic         = "STOB"

	fsFormatSHA256 = 1 // the first format, whose checksum is a SHA-256
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fsHeader is the decoded header of one object file.
type fsHeader struct {
	version   byte
	length    uint64
	versionID [16]byte
	checksum  [sha256.Size]byte
}

// etag is the object's ETag: the version id in hex.
func (h fsHeader) etag() string { return hex.EncodeToString(h.versionID[:]) }

// newFSChecksum returns the hash whose Sum newFSHeader takes: the
// current format's CRC-32C.
func newFSChecksum() hash.Hash { return crc32.New(castagnoli) }

// newFSHeader builds the current format's header for content of length
// bytes whose newFSChecksum Sum is sum, with a fresh version id.
func newFSHeader(length int64, sum []byte) (fsHeader, error) {
	h := fsHeader{version: fsFormatVersion, length: uint64(length)}
	copy(h.checksum[:], sum)
	if _, err := rand.Read(h.versionID[:]); err != nil {
		return fsHeader{}, fmt.Errorf("fs: new version id: %w", err)
	}
	return h, nil
}

// matches reports whether data is the content h's checksum was made from.
func (h fsHeader) matches(data []byte) bool {
	if h.version == fsFormatSHA256 {
		return sha256.Sum256(data) == h.checksum
	}
	var want [sha256.Size]byte
	binary.BigEndian.PutUint32(want[:], crc32.Checksum(data, castagnoli))
	return want == h.checksum
}

func (h fsHeader) encode() []byte {
	b := make([]byte, fsHeaderSize)
	copy(b[0:4], fsMagic)
	b[4] = h.version
	binary.BigEndian.PutUint64(b[8:16], h.length)
	copy(b[16:32], h.versionID[:])
	copy(b[32:64], h.checksum[:])
	return b
}

// decodeFSHeader parses a header read from disk. fileSize is the size of the
// whole file; a header whose length disagrees with it is rejected, so a
// truncated or padded file never passes as a valid object. The returned
// string is the reason for rejection, for a CorruptObjectError.
func decodeFSHeader(b []byte, fileSize int64) (fsHeader, string) {
	if len(b) < fsHeaderSize {
		return fsHeader{}, fmt.Sprintf("header is %d bytes, want %d", len(b), fsHeaderSize)
	}
	if !bytes.Equal(b[0:4], []byte(fsMagic)) {
		return fsHeader{}, fmt.Sprintf("bad magic %q", b[0:4])
	}
	if b[4] != fsFormatVersion && b[4] != fsFormatSHA256 {
		return fsHeader{}, fmt.Sprintf("unknown format version %d", b[4])
	}
	if b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return fsHeader{}, "reserved header bytes are not zero"
	}
	h := fsHeader{version: b[4]}
	h.length = binary.BigEndian.Uint64(b[8:16])
	copy(h.versionID[:], b[16:32])
	copy(h.checksum[:], b[32:64])
	if h.version != fsFormatSHA256 && !bytes.Equal(b[36:64], make([]byte, 28)) {
		return fsHeader{}, "checksum padding is not zero"
	}
	if fileSize < fsHeaderSize || h.length != uint64(fileSize-fsHeaderSize) {
		return fsHeader{}, fmt.Sprintf("header says %d content bytes, file holds %d", h.length, fileSize-fsHeaderSize)
	}
	return h, ""
}
