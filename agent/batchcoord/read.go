package batchcoord

import "unsafe"

// View is what a reader learns of a diskless partition from its
// coordinator: its offsets and, for a lookup, the batches from an offset
// on. Batches is nil when the offset is below CompactedEnd (the manifest
// has it) or at HighWatermark (nothing yet).
type View struct {
	LogStart      int64
	CompactedEnd  int64
	HighWatermark int64
	LastStable    int64
	Epoch         int32 // the coordinator's
	Batches       []Located
}

// Read returns k's offsets and the committed batches from offset on,
// summing to at most maxBytes but at least one, and a channel closed
// when the high watermark next moves (or the coordinator closes), for a
// long poll. A partition never committed to is empty at offset 0.
func (c *Coordinator) Read(k PartitionKey, offset, maxBytes int64) (View, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return View{}, nil, ErrClosed
	}
	// A partition not committed to yet is created empty, so that the
	// long poll of its first reader wakes at its first commit. Readers
	// name partitions of existing diskless topics (the wire server
	// checks), so this grows no further than the commits would.
	p := c.part(k)
	v := c.viewLocked(p)
	if offset >= p.index.Start() && offset < p.index.End() {
		v.Batches, _ = p.index.Find(offset, maxBytes)
	}
	return v, p.moved, nil
}

func (c *Coordinator) viewLocked(p *partState) View {
	v := View{LogStart: p.logStart, CompactedEnd: p.index.Start(), HighWatermark: p.index.End(), Epoch: c.cfg.Epoch}
	v.LastStable = v.HighWatermark
	if f := p.producers.FirstUnstable(); f >= 0 {
		v.LastStable = f
	}
	return v
}

// OffsetForEpoch answers OffsetForLeaderEpoch for k: the largest epoch at
// most epoch, and the offset where the next began (or the high
// watermark); -1, -1 when epoch precedes every commit.
func (c *Coordinator) OffsetForEpoch(k PartitionKey, epoch int32) (int32, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, 0, ErrClosed
	}
	p, ok := c.parts[k]
	if !ok {
		return -1, -1, nil
	}
	e, end := EndOffsetForEpoch(p.epochs, p.index.End(), epoch)
	return e, end, nil
}

// FindByTimestamp returns the first batch at or above the compacted end
// whose max timestamp is at least ts (ListOffsets by time), and false
// when none is.
func (c *Coordinator) FindByTimestamp(k PartitionKey, ts int64) (Located, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Located{}, false, ErrClosed
	}
	p, ok := c.parts[k]
	if !ok {
		return Located{}, false, nil
	}
	// Max timestamps need not grow with offsets (producers' clocks
	// differ), so the scan is linear, over the uncompacted tail only.
	for _, b := range p.index.batches {
		if b.MaxTimestamp >= ts {
			return b, true, nil
		}
	}
	return Located{}, false, nil
}

// MaxTimestamp returns the batch with the largest max timestamp at or
// above the log start, the last of equals (ListOffsets -3), and false
// when there is none.
func (c *Coordinator) MaxTimestamp(k PartitionKey) (Located, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Located{}, false, ErrClosed
	}
	p, ok := c.parts[k]
	if !ok {
		return Located{}, false, nil
	}
	var best Located
	found := false
	for _, b := range p.index.batches {
		if b.LastOffset >= p.logStart && (!found || b.MaxTimestamp >= best.MaxTimestamp) {
			best, found = b, true
		}
	}
	return best, found, nil
}

// Guard stands a verification guard for producerID at epoch on k
// (KIP-890): until a marker of the producer, a transactional batch of
// it that would open its transaction may commit.
func (c *Coordinator) Guard(k PartitionKey, producerID int64, epoch int16) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.part(k).guards[producerID] = epoch
	return nil
}

// AbortedIn returns k's aborted transactions that overlap [from, upper),
// whose markers are above the compacted end.
func (c *Coordinator) AbortedIn(k PartitionKey, from, upper int64) ([]Aborted, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	p, ok := c.parts[k]
	if !ok {
		return nil, nil
	}
	var out []Aborted
	for _, a := range p.aborted {
		if a.LastOffset >= from && a.FirstOffset < upper {
			out = append(out, a)
		}
	}
	return out, nil
}

// References marks in referenced[i] whether ids[i] is an object this
// coordinator's indexes name (the orphan janitor's question); it leaves
// the other flags as they are, so one slice gathers several
// coordinators' answers.
func (c *Coordinator) References(ids [][16]byte, referenced []bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	want := make(map[[16]byte]int, len(ids))
	for i, id := range ids {
		want[id] = i
	}
	for _, p := range c.parts {
		for _, b := range p.index.batches {
			if i, ok := want[b.ObjectID]; ok {
				referenced[i] = true
			}
		}
	}
	return nil
}

// Size reports how many diskless partitions the coordinator holds and
// about how many bytes of memory their offset indexes take (the
// coordinator's share of strata_diskless_coordinator_index_bytes).
func (c *Coordinator) Size() (partitions int, indexBytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.parts {
		indexBytes += int64(p.index.Len()) * locatedBytes
		for _, b := range p.index.batches {
			indexBytes += int64(len(b.Inline))
		}
	}
	return len(c.parts), indexBytes
}

// locatedBytes is the memory of one Located without its inline bytes.
const locatedBytes = int64(unsafe.Sizeof(Located{}))
