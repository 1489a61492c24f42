package log

import (
	"encoding/binary"
	"fmt"
)

// epochCache maps each leader epoch to the first offset written in it, as
// Kafka's LeaderEpochFileCache; OffsetForLeaderEpoch answers from it.
// Entries have strictly increasing epochs and non-decreasing offsets.
// Guarded by Log.mu.
type epochCache struct {
	entries []epochEntry
}

type epochEntry struct {
	epoch int32
	start int64
}

func (c *epochCache) latest() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].epoch
}

// epochAt returns the epoch of the batch at offset: the last entry
// starting at or before it.
func (c *epochCache) epochAt(offset int64) (int32, bool) {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].start <= offset {
			return c.entries[i].epoch, true
		}
	}
	return -1, false
}

// assign records that epoch starts at offset start; it reports a change.
// Epochs at or below the latest are ignored (a leader never goes back).
func (c *epochCache) assign(epoch int32, start int64) bool {
	if epoch < 0 || epoch <= c.latest() {
		return false
	}
	c.entries = append(c.entries, epochEntry{epoch: epoch, start: start})
	return true
}

// truncateFromEnd drops epochs that start at or after leo.
func (c *epochCache) truncateFromEnd(leo int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].start >= leo {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart forgets offsets below lso: the last epoch that started
// before lso now starts at lso, and earlier ones go.
func (c *epochCache) truncateFromStart(lso int64) bool {
	i := 0
	for i+1 < len(c.entries) && c.entries[i+1].start <= lso {
		i++
	}
	changed := i > 0
	c.entries = c.entries[i:]
	if len(c.entries) > 0 && c.entries[0].start < lso {
		c.entries[0].start = lso
		changed = true
	}
	return changed
}

// endOffsetFor answers OffsetForLeaderEpoch as Kafka does: for the latest
// epoch the log end; otherwise the largest known epoch <= requested with the
// start offset of the next higher epoch; a requested epoch below every known
// one comes back as itself with the first epoch's start; unknown (above the
// latest, or no epochs) is (-1, -1).
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	if epoch < 0 || len(c.entries) == 0 {
		return -1, -1
	}
	if epoch == c.latest() {
		return epoch, leo
	}
	// First entry with a higher epoch.
	hi := -1
	for i, e := range c.entries {
		if e.epoch > epoch {
			hi = i
			break
		}
	}
	if hi < 0 {
		return -1, -1
	}
	if hi == 0 {
		return epoch, c.entries[0].start
	}
	return c.entries[hi-1].epoch, c.entries[hi].start
}

func (c *epochCache) encode() []byte {
	p := binary.BigEndian.AppendUint32(nil, uint32(len(c.entries)))
	for _, e := range c.entries {
		p = binary.BigEndian.AppendUint32(p, uint32(e.epoch))
		p = binary.BigEndian.AppendUint64(p, uint64(e.start))
	}
	return encodeFrame(magicEpoch, p)
}

func decodeEpochs(b []byte) (epochCache, error) {
	p, err := decodeFrame(magicEpoch, b)
	if err != nil {
		return epochCache{}, err
	}
	if len(p) < 4 {
		return epochCache{}, fmt.Errorf("%w: epoch count", errBadStateFile)
	}
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	if uint64(len(p)) != uint64(n)*12 {
		return epochCache{}, fmt.Errorf("%w: %d epochs in %d bytes", errBadStateFile, n, len(p))
	}
	var c epochCache
	for i := 0; i < int(n); i++ {
		e := epochEntry{epoch: int32(binary.BigEndian.Uint32(p[i*12:])), start: int64(binary.BigEndian.Uint64(p[i*12+4:]))}
		if e.epoch < 0 || e.start < 0 || (i > 0 && (e.epoch <= c.entries[i-1].epoch || e.start < c.entries[i-1].start)) {
			return epochCache{}, fmt.Errorf("%w: epoch entry %d", errBadStateFile, i)
		}
		c.entries = append(c.entries, e)
	}
	return c, nil
}
