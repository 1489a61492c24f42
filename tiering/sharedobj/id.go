package sharedobj

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// KeyPrefix is where commit objects live in the bucket.
const KeyPrefix = "diskless/objects/"

const keySuffix = ".obj"

// ID names one commit object: a UUIDv7 (RFC 9562), whose first 48 bits
// are the cut time in unix milliseconds, so that keys list in cut order
// and the orphan janitor can stop at the first one newer than its grace.
type ID [16]byte

// NewID returns a fresh ID for an object cut at t.
func NewID(t time.Time) (ID, error) {
	var id ID
	if _, err := rand.Read(id[6:]); err != nil {
		return ID{}, fmt.Errorf("sharedobj: new object id: %w", err)
	}
	ms := uint64(t.UnixMilli())
	binary.BigEndian.PutUint16(id[0:], uint16(ms>>32))
	binary.BigEndian.PutUint32(id[2:], uint32(ms))
	id[6] = id[6]&0x0f | 0x70 // version 7
	id[8] = id[8]&0x3f | 0x80 // variant 10
	return id, nil
}

// Time is the cut time the ID carries.
func (id ID) Time() time.Time {
	ms := int64(binary.BigEndian.Uint16(id[0:]))<<32 | int64(binary.BigEndian.Uint32(id[2:]))
	return time.UnixMilli(ms)
}

// String is the ID in 32 lowercase hex digits, as in the object's key.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Key is the object's key in the bucket.
func (id ID) Key() string { return KeyPrefix + id.String() + keySuffix }

// ParseKey returns the ID of a commit object's key; false for any other
// key, which the janitor leaves alone.
func ParseKey(key string) (ID, bool) {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return ID{}, false
	}
	h, ok := strings.CutSuffix(rest, keySuffix)
	if !ok || len(h) != 32 || strings.ToLower(h) != h {
		return ID{}, false
	}
	var id ID
	if _, err := hex.Decode(id[:], []byte(h)); err != nil {
		return ID{}, false
	}
	return id, true
}
