package console

import (
	"cmp"
	"container/heap"
	"slices"
)

// Page is one answer of GET /v1/console/records: the rows of one page of
// the message browser and where the pages before and after it start.
type Page struct {
	Topic string `json:"topic"`
	// Partition is the partition browsed; -1 for all of them.
	Partition int32    `json:"partition"`
	From      string   `json:"from"`
	Isolation string   `json:"isolation"`
	Decode    Encoding `json:"decode"`
	Key       string   `json:"key,omitempty"`
	Limit     int      `json:"limit"`
	// ValueMaxBytes is the cap on each value's text.
	ValueMaxBytes int             `json:"value_max_bytes"`
	Partitions    []PagePartition `json:"partitions"`
	// Records are in offset order for one partition, in timestamp order
	// (then partition and offset) for all.
	Records []Record `json:"records"`
	// Prev and Next are the from= of the pages before and after this one,
	// for one partition; "" at the log's start or end, and for all
	// partitions.
	Prev string `json:"prev,omitempty"`
	Next string `json:"next,omitempty"`
	// Stopped is why the read ended (the Stop* constants).
	Stopped string `json:"stopped"`
	// Scanned counts the records read, shown or not.
	Scanned int      `json:"scanned"`
	Notes   []string `json:"notes,omitempty"`
}

// Why a page's read ended.
const (
	StopEnd         = "end"          // every range was read to its end
	StopLimit       = "limit"        // the page has its number of rows
	StopPageBytes   = "page_bytes"   // the page has its bytes of text
	StopScanRecords = "scan_records" // the read looked at as many records as it may
	StopScanBytes   = "scan_bytes"   // the read fetched as many bytes as it may
	StopTime        = "time"         // the read ran out of time, or nothing more came
)

// PagePartition is what a page read of one partition.
type PagePartition struct {
	Partition int32 `json:"partition"`
	LogStart  int64 `json:"log_start_offset"`
	// End is the high watermark, or the last stable offset under
	// read_committed: where a read stops.
	End int64 `json:"end_offset"`
	// ReadFrom and ReadTo bound what the page covers: every record in
	// [ReadFrom, ReadTo) that the filter matches is a row.
	ReadFrom int64 `json:"read_from"`
	ReadTo   int64 `json:"read_to"`
}

// ByOffset orders rows by partition, then offset.
func ByOffset(a, b *Record) int {
	return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
}

// ByTime orders rows by timestamp, then partition and offset.
func ByTime(a, b *Record) int {
	return cmp.Or(cmp.Compare(a.Timestamp, b.Timestamp), ByOffset(a, b))
}

// Collector keeps the rows of a page: at most limit rows and at most
// maxBytes of text (Record.Bytes; the first row is kept whatever its
// size), the first ones in order when keepFirst, else the last ones. It
// holds only what it may show, so a read can go on past a full page
// (to merge partitions, or to find the last rows of a range) without
// holding what it read. Not safe for concurrent use.
type Collector struct {
	h         rowHeap
	limit     int
	maxBytes  int
	bytes     int
	dropped   int
	bytesFull bool
}

// NewCollector is an empty page.
func NewCollector(order func(a, b *Record) int, keepFirst bool, limit, maxBytes int) *Collector {
	return &Collector{h: rowHeap{order: order, keepFirst: keepFirst}, limit: max(limit, 1), maxBytes: maxBytes}
}

// Add offers a row, and reports whether the page keeps it (it may drop
// it later for a better one).
func (c *Collector) Add(r Record) bool {
	row := &r
	heap.Push(&c.h, row)
	c.bytes += row.Bytes()
	kept := true
	for c.h.Len() > c.limit || c.bytes > c.maxBytes && c.h.Len() > 1 {
		if c.h.Len() <= c.limit {
			c.bytesFull = true
		}
		worst := heap.Pop(&c.h).(*Record)
		c.bytes -= worst.Bytes()
		c.dropped++
		if worst == row {
			kept = false
		}
	}
	return kept
}

// Len is the number of rows kept.
func (c *Collector) Len() int { return c.h.Len() }

// Dropped counts the rows offered and not kept.
func (c *Collector) Dropped() int { return c.dropped }

// BytesFull reports whether a row was dropped for the byte cap rather than
// the row limit.
func (c *Collector) BytesFull() bool { return c.bytesFull }

// Rows are the rows kept, in order.
func (c *Collector) Rows() []Record {
	out := make([]Record, 0, c.h.Len())
	for _, r := range c.h.rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Record) int { return c.h.order(&a, &b) })
	return out
}

// rowHeap has the row the page would drop first on top.
type rowHeap struct {
	rows      []*Record
	order     func(a, b *Record) int
	keepFirst bool
}

func (h rowHeap) Len() int { return len(h.rows) }
func (h rowHeap) Less(i, j int) bool {
	if h.keepFirst {
		return h.order(h.rows[i], h.rows[j]) > 0
	}
	return h.order(h.rows[i], h.rows[j]) < 0
}
func (h rowHeap) Swap(i, j int) { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *rowHeap) Push(x any)   { h.rows = append(h.rows, x.(*Record)) }
func (h *rowHeap) Pop() any {
	last := h.rows[len(h.rows)-1]
	h.rows[len(h.rows)-1] = nil
	h.rows = h.rows[:len(h.rows)-1]
	return last
}
