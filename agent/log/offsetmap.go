package log

import (
	"crypto/md5"
	"encoding/binary"
)

// OffsetMap is the cleaner's key -> latest offset map, in a fixed buffer
// so that its memory is bounded by --log-cleaner-dedupe-buffer-size
// whatever the keys (Kafka's SkimpyOffsetMap). A key is stored as its
// 16-byte MD5 digest: two keys colliding would let the older one's records
// be dropped for the younger's, at odds of about 2^-64 for a map of 2^32
// keys, the risk Kafka takes too.
//
// Slot layout, open addressing with linear probing:
//
//	digest [16]byte | offset+1 uint64 (0: empty slot)
//
// The map takes at most loadFactor of its slots, so that probes stay
// short. It is not safe for concurrent use; an agent's cleaner owns one.
type OffsetMap struct {
	slots   []byte
	n, max  int
	latest  int64 // largest offset put, -1 when empty
	scratch [md5.Size]byte
}

const (
	offsetSlotSize = md5.Size + 8
	// offsetMapLoadFactor is Kafka's log.cleaner.io.buffer.load.factor.
	offsetMapLoadFactor = 0.9
	// MinOffsetMapBytes is room for a few thousand keys: a smaller map
	// could not hold one segment's keys and the cleaner would not progress.
	MinOffsetMapBytes = 64 << 10
)

// NewOffsetMap allocates a map in a buffer of about bytes bytes.
func NewOffsetMap(bytes int) *OffsetMap {
	slots := max(bytes, MinOffsetMapBytes) / offsetSlotSize
	return &OffsetMap{slots: make([]byte, slots*offsetSlotSize), max: int(float64(slots) * offsetMapLoadFactor), latest: -1}
}

// Capacity is how many keys the map holds before it is full.
func (m *OffsetMap) Capacity() int { return m.max }

// Len is the number of keys in the map.
func (m *OffsetMap) Len() int { return m.n }

// Reset empties the map for the next log.
func (m *OffsetMap) Reset() {
	clear(m.slots)
	m.n, m.latest = 0, -1
}

// slot finds key's slot, or the empty slot where it would go.
func (m *OffsetMap) slot(key []byte) (pos int, found bool) {
	m.scratch = md5.Sum(key)
	count := len(m.slots) / offsetSlotSize
	i := int(binary.BigEndian.Uint64(m.scratch[:8]) % uint64(count))
	for {
		pos = i * offsetSlotSize
		s := m.slots[pos : pos+offsetSlotSize]
		if binary.BigEndian.Uint64(s[md5.Size:]) == 0 {
			return pos, false
		}
		if [md5.Size]byte(s[:md5.Size]) == m.scratch {
			return pos, true
		}
		i++
		if i == count {
			i = 0
		}
	}
}

// Put records offset as key's latest; it reports false, changing nothing,
// when key is new and the map is full.
func (m *OffsetMap) Put(key []byte, offset int64) bool {
	pos, found := m.slot(key)
	if !found {
		if m.n >= m.max {
			return false
		}
		m.n++
		copy(m.slots[pos:], m.scratch[:])
	}
	binary.BigEndian.PutUint64(m.slots[pos+md5.Size:], uint64(offset)+1)
	m.latest = max(m.latest, offset)
	return true
}

// Get returns key's latest offset.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	pos, found := m.slot(key)
	if !found {
		return -1, false
	}
	return int64(binary.BigEndian.Uint64(m.slots[pos+md5.Size:])) - 1, true
}
