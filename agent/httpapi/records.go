package httpapi

// The console's message browser (issue 32, item 2):
//
//	GET /v1/console/records?topic=T&partition=P|all&from=F&limit=K
//	    &isolation=read_uncommitted|read_committed&key=S&decode=auto|json|text|hex
//	    &max_value_bytes=N
//
// answers one page of a topic's records as JSON (console.Page). from is
// start, end, offset:N (the records from N on), before:N (the last K
// before N) or timestamp:MS (from the first record at or after MS, Unix
// milliseconds); all partitions take start, end and timestamp only.
//
// The page is read through a Kafka client of this agent (kafkaClient), so
// from the partition's leader, its local log or the bucket, as any
// consumer's fetch: first its log start and end (high watermark, or last
// stable offset under read_committed) are listed, then one range of
// offsets [from, to) per partition is fetched forward with bounded fetch
// sizes, keeping control records. Going back, to [max(log start, N-K),
// N) is read (with a key filter, up to ScanMaxRecords before N) and the
// last K rows kept. A page holds only the rows it shows (console.Collector),
// and its read ends at the first of: every range read, K rows (going
// forward), the page's bytes, ScanMaxRecords or ScanMaxBytes looked at,
// IdleTimeout without a record once some came, or Timeout.
//
// Prev and Next, for one partition, continue on either side of the range
// the page covers: every matching record in [read_from, read_to) is a row.
// For all partitions, each partition's first (or, for end, last) K
// records are read and the page keeps the K earliest (latest) by
// timestamp; there is no paging, as timestamps need not grow with
// offsets.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/console"
)

// BrowseConfig bounds the message browser's reads. Not flags: the zero
// value is DefaultBrowseConfig(), and tests set smaller ones.
type BrowseConfig struct {
	// DefaultRecords and MaxRecords are limit='s default and most.
	DefaultRecords, MaxRecords int
	// PageMaxBytes bounds the text of one page's keys, values and headers.
	PageMaxBytes int
	// DefaultValueBytes and ValueMaxBytes are max_value_bytes='s default
	// and most: the text shown of one value.
	DefaultValueBytes, ValueMaxBytes int
	// ScanMaxRecords and ScanMaxBytes bound what one page looks at, shown
	// or not (a key filter may skip many).
	ScanMaxRecords int
	ScanMaxBytes   int64
	// FetchMaxBytes bounds one fetch response, and one partition's share
	// of it (a broker still returns a first batch larger than that).
	FetchMaxBytes int32
	// Timeout bounds one page; IdleTimeout ends a read that has had
	// records when no more come for that long (a range whose tail the
	// log no longer holds: compacted, or aborted under read_committed).
	Timeout, IdleTimeout time.Duration
	// Concurrent is how many pages the agent reads at once; more wait
	// for a turn within Timeout.
	Concurrent int
}

// DefaultBrowseConfig: 50 rows a page and at most 500, 4 KiB shown of a
// value and at most 64 KiB, 1 MiB of text a page, 10,000 records and
// 32 MiB looked at, fetches of 1 MiB, 10 s a page, two pages at once.
func DefaultBrowseConfig() BrowseConfig {
	return BrowseConfig{DefaultRecords: 50, MaxRecords: 500, PageMaxBytes: 1 << 20, DefaultValueBytes: 4 << 10, ValueMaxBytes: 64 << 10,
		ScanMaxRecords: 10_000, ScanMaxBytes: 32 << 20, FetchMaxBytes: 1 << 20, Timeout: 10 * time.Second, IdleTimeout: 2 * time.Second, Concurrent: 2}
}

// Validate names the first field out of range.
func (c BrowseConfig) Validate() error {
	switch {
	case c.MaxRecords < 1 || c.DefaultRecords < 1 || c.DefaultRecords > c.MaxRecords:
		return fmt.Errorf("browse: DefaultRecords %d and MaxRecords %d: want 1 <= default <= max", c.DefaultRecords, c.MaxRecords)
	case c.ValueMaxBytes < 16 || c.DefaultValueBytes < 16 || c.DefaultValueBytes > c.ValueMaxBytes:
		return fmt.Errorf("browse: DefaultValueBytes %d and ValueMaxBytes %d: want 16 <= default <= max", c.DefaultValueBytes, c.ValueMaxBytes)
	case c.PageMaxBytes < c.ValueMaxBytes:
		return fmt.Errorf("browse: PageMaxBytes %d is less than ValueMaxBytes %d", c.PageMaxBytes, c.ValueMaxBytes)
	case c.ScanMaxRecords < c.MaxRecords || c.ScanMaxBytes < 1 || c.FetchMaxBytes < 1:
		return fmt.Errorf("browse: ScanMaxRecords %d (at least MaxRecords), ScanMaxBytes %d, FetchMaxBytes %d", c.ScanMaxRecords, c.ScanMaxBytes, c.FetchMaxBytes)
	case c.Timeout <= 0 || c.IdleTimeout <= 0 || c.Concurrent < 1:
		return fmt.Errorf("browse: Timeout %v, IdleTimeout %v, Concurrent %d: want them positive", c.Timeout, c.IdleTimeout, c.Concurrent)
	}
	return nil
}

func (s *Server) browseConfig() BrowseConfig {
	if s.cfg.Browse == (BrowseConfig{}) {
		return DefaultBrowseConfig()
	}
	return s.cfg.Browse
}

// browseKeyMaxBytes bounds key=.
const browseKeyMaxBytes = 1024

// The from= kinds.
const (
	fromStart     = "start"
	fromEnd       = "end"
	fromOffset    = "offset"
	fromBefore    = "before"
	fromTimestamp = "timestamp"
)

// browseQuery is a parsed request.
type browseQuery struct {
	topic     string
	partition int32 // -1: all
	fromKind  string
	fromValue int64 // offset:, before:, timestamp:
	limit     int
	committed bool
	key       []byte // nil: no filter
	decode    console.Encoding
	valueMax  int
}

// backward reports whether the page ends at its from (end, before:N).
func (q browseQuery) backward() bool { return q.fromKind == fromEnd || q.fromKind == fromBefore }

func (q browseQuery) from() string {
	switch q.fromKind {
	case fromOffset, fromBefore, fromTimestamp:
		return q.fromKind + ":" + strconv.FormatInt(q.fromValue, 10)
	}
	return q.fromKind
}

func (q browseQuery) isolation() string {
	if q.committed {
		return "read_committed"
	}
	return "read_uncommitted"
}

// badParam is a request the browser refuses (400), naming the parameter.
type badParam struct{ name, msg string }

func (e *badParam) Error() string { return e.name + ": " + e.msg }

func parseBrowseQuery(v url.Values, cfg BrowseConfig) (browseQuery, error) {
	q := browseQuery{topic: v.Get("topic"), partition: -1, fromKind: fromEnd, limit: cfg.DefaultRecords,
		decode: console.EncodingAuto, valueMax: cfg.DefaultValueBytes}
	if q.topic == "" {
		return q, &badParam{"topic", "required"}
	}
	if p := v.Get("partition"); p != "" && p != "all" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return q, &badParam{"partition", fmt.Sprintf("%q: want a partition number or all", p)}
		}
		q.partition = int32(n)
	}
	if f := v.Get("from"); f != "" {
		kind, value, hasValue := strings.Cut(f, ":")
		switch kind {
		case fromStart, fromEnd:
			if hasValue {
				return q, &badParam{"from", fmt.Sprintf("%q: %s takes no value", f, kind)}
			}
		case fromOffset, fromBefore, fromTimestamp:
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 {
				return q, &badParam{"from", fmt.Sprintf("%q: want %s:N, N a number at least 0", f, kind)}
			}
			q.fromValue = n
		default:
			return q, &badParam{"from", fmt.Sprintf("%q: want start, end, offset:N, before:N or timestamp:MS", f)}
		}
		q.fromKind = kind
	}
	if q.partition < 0 && (q.fromKind == fromOffset || q.fromKind == fromBefore) {
		return q, &badParam{"from", fmt.Sprintf("%s needs one partition (partition=N); all partitions take start, end or timestamp:MS", q.from())}
	}
	var err error
	if q.limit, err = intParam(v, "limit", cfg.DefaultRecords, 1, cfg.MaxRecords); err != nil {
		return q, err
	}
	if q.valueMax, err = intParam(v, "max_value_bytes", cfg.DefaultValueBytes, 16, cfg.ValueMaxBytes); err != nil {
		return q, err
	}
	switch iso := v.Get("isolation"); iso {
	case "", "read_uncommitted":
	case "read_committed":
		q.committed = true
	default:
		return q, &badParam{"isolation", fmt.Sprintf("%q: want read_uncommitted or read_committed", iso)}
	}
	if k := v.Get("key"); k != "" {
		if len(k) > browseKeyMaxBytes {
			return q, &badParam{"key", fmt.Sprintf("%d bytes: at most %d", len(k), browseKeyMaxBytes)}
		}
		q.key = []byte(k)
	}
	if d := v.Get("decode"); d != "" {
		if q.decode, err = console.ParseEncoding(d); err != nil {
			return q, &badParam{"decode", err.Error()}
		}
	}
	return q, nil
}

func intParam(v url.Values, name string, def, least, most int) (int, error) {
	s := v.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least || n > most {
		return 0, &badParam{name, fmt.Sprintf("%q: want a number from %d to %d", s, least, most)}
	}
	return n, nil
}

// browseError is an answer other than a page: its status and message.
type browseError struct {
	status int
	msg    string
}

func (e *browseError) Error() string { return e.msg }

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// browseSlots lets BrowseConfig.Concurrent pages be read at once. The
// zero value is ready to use.
type browseSlots struct {
	once  sync.Once
	slots chan struct{}
}

func (b *browseSlots) acquire(ctx context.Context, n int) bool {
	b.once.Do(func() { b.slots = make(chan struct{}, n) })
	select {
	case b.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (b *browseSlots) release() { <-b.slots }

// consoleRecords serves GET /v1/console/records.
func (s *Server) consoleRecords(w http.ResponseWriter, r *http.Request) {
	cfg := s.browseConfig()
	q, err := parseBrowseQuery(r.URL.Query(), cfg)
	if err != nil {
		writeJSONError(w, http.StatusBadRequest, err.Error())
		return
	}
	partitions, err := s.browsePartitions(q)
	if err != nil {
		writeJSONError(w, http.StatusNotFound, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), cfg.Timeout)
	defer cancel()
	if !s.browse.acquire(ctx, cfg.Concurrent) {
		writeJSONError(w, http.StatusServiceUnavailable, fmt.Sprintf("the agent is reading %d other pages; try again", cfg.Concurrent))
		return
	}
	defer s.browse.release()
	page, err := s.readPage(ctx, q, partitions, cfg)
	if err != nil {
		var be *browseError
		if errors.As(err, &be) {
			writeJSONError(w, be.status, be.msg)
			return
		}
		writeJSONError(w, http.StatusBadGateway, "reading "+q.topic+": "+err.Error())
		return
	}
	writeJSON(w, page)
}

// browsePartitions are the partitions q reads, or an error naming the
// topic or partition the agent does not know.
func (s *Server) browsePartitions(q browseQuery) ([]int32, error) {
	for _, t := range s.host.Topics() {
		if t.Name != q.topic {
			continue
		}
		if q.partition >= 0 {
			if q.partition >= t.PartitionCount {
				return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", q.topic, q.partition, t.PartitionCount)
			}
			return []int32{q.partition}, nil
		}
		all := make([]int32, t.PartitionCount)
		for i := range all {
			all[i] = int32(i)
		}
		return all, nil
	}
	return nil, fmt.Errorf("topic %q not found", q.topic)
}
