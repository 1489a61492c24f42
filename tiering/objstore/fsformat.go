package objstore

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// The fs backend stores each object as one file: a fixed header followed by
// the object's bytes exactly as the caller gave them.
//
//	offset size field
//	     0    4 magic "STOB"
//	     4    1 format version (1)
//	     5    3 reserved, zero
//	     8    8 content length in bytes, big-endian uint64
//	    16   16 version id: random, new on every Put; the ETag is its hex
//	    32   32 SHA-256 of the content
//	    64    n content
//
// Why a header rather than bare files: the ETag must be stable across
// processes, cheap to read (Stat and List must not hash gigabyte segments)
// and new on every Put (so IfMatch means "nobody wrote since I read"). A
// random id written inside the file is replaced in the same rename as the
// content, so ETag and content can never disagree. The checksum lets Get
// detect bytes the disk lost or changed.
const (
	fsHeaderSize    = 64
	fsFormatVersion = 1
	fsMagic         = "STOB"
)

// fsHeader is the decoded header of one object file.
type fsHeader struct {
	length    uint64
	versionID [16]byte
	checksum  [sha256.Size]byte
}

// etag is the object's ETag: the version id in hex.
func (h fsHeader) etag() string { return hex.EncodeToString(h.versionID[:]) }

// newFSHeader builds the header for content of length bytes with the given
// SHA-256, and a fresh version id.
func newFSHeader(length int64, checksum [sha256.Size]byte) (fsHeader, error) {
	h := fsHeader{length: uint64(length), checksum: checksum}
	if _, err := rand.Read(h.versionID[:]); err != nil {
		return fsHeader{}, fmt.Errorf("fs: new version id: %w", err)
	}
	return h, nil
}

func (h fsHeader) encode() []byte {
	b := make([]byte, fsHeaderSize)
	copy(b[0:4], fsMagic)
	b[4] = fsFormatVersion
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
	if b[4] != fsFormatVersion {
		return fsHeader{}, fmt.Sprintf("unknown format version %d", b[4])
	}
	if b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return fsHeader{}, "reserved header bytes are not zero"
	}
	var h fsHeader
	h.length = binary.BigEndian.Uint64(b[8:16])
	copy(h.versionID[:], b[16:32])
	copy(h.checksum[:], b[32:64])
	if fileSize < fsHeaderSize || h.length != uint64(fileSize-fsHeaderSize) {
		return fsHeader{}, fmt.Sprintf("header says %d content bytes, file holds %d", h.length, fileSize-fsHeaderSize)
	}
	return h, ""
}
