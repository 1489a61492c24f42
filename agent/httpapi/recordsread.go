package httpapi

// The message browser's read of one page (records.go): the partitions'
// offsets listed, then their ranges fetched through a Kafka client of
// this agent, the rows kept in a console.Collector and the markers in a
// console.TxnOutcomes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/agent/console"
)

// browseRange is one partition's read.
type browseRange struct {
	part    console.PagePartition // ReadFrom and ReadTo: the range asked, then read
	next    int64                 // the offset after the last record looked at
	matches int
	done    bool
}

// readPage lists the partitions' offsets, then reads their ranges.
func (s *Server) readPage(ctx context.Context, q browseQuery, partitions []int32, cfg BrowseConfig) (*console.Page, error) {
	ranges, notes, err := s.browseRanges(ctx, q, partitions, cfg)
	if err != nil {
		return nil, err
	}
	page := &console.Page{Topic: q.topic, Partition: q.partition, From: q.from(), Isolation: q.isolation(), Decode: q.decode,
		Key: string(q.key), Limit: q.limit, ValueMaxBytes: q.valueMax, Notes: notes, Records: []console.Record{}}
	order := console.ByOffset
	if q.partition < 0 {
		order = console.ByTime
	}
	rows := console.NewCollector(order, !q.backward(), q.limit, cfg.PageMaxBytes)
	var txns console.TxnOutcomes
	if err := s.readRanges(ctx, q, ranges, cfg, rows, &txns, page); err != nil {
		return nil, err
	}
	page.Records = rows.Rows()
	txns.Mark(page.Records)
	switch {
	case page.Stopped != "":
	case rows.BytesFull():
		page.Stopped = console.StopPageBytes
	case rows.Dropped() > 0:
		page.Stopped = console.StopLimit
	default:
		page.Stopped = console.StopEnd
		for _, rg := range ranges {
			if rg.next < rg.part.ReadTo {
				page.Stopped = console.StopLimit // a forward read that had its K rows
			}
		}
	}
	for _, p := range partitions {
		rg := ranges[p]
		rg.part.ReadTo = rg.next
		page.Partitions = append(page.Partitions, rg.part)
	}
	if q.partition >= 0 {
		pp := &page.Partitions[0]
		// A page trimmed to its rows covers up to them: the rows dropped
		// are the next (or previous) page's.
		if n := len(page.Records); n > 0 && rows.Dropped() > 0 {
			if q.backward() {
				pp.ReadFrom = page.Records[0].Offset
			} else {
				pp.ReadTo = page.Records[n-1].Offset + 1
			}
		}
		if pp.ReadFrom > pp.LogStart {
			page.Prev = fromBefore + ":" + strconv.FormatInt(pp.ReadFrom, 10)
		}
		if pp.ReadTo < pp.End {
			page.Next = fromOffset + ":" + strconv.FormatInt(pp.ReadTo, 10)
		}
	}
	return page, nil
}

// browseRanges lists each partition's log start and end (and the offset
// of from=timestamp:) and turns q into the offsets to read.
func (s *Server) browseRanges(ctx context.Context, q browseQuery, partitions []int32, cfg BrowseConfig) (map[int32]*browseRange, []string, error) {
	cl, err := s.kafkaClient(kgo.ClientID("strata-console-browser"))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	list := func(what string, f func() (kadm.ListedOffsets, error)) (map[int32]int64, error) {
		listed, err := f()
		if err != nil {
			return nil, fmt.Errorf("list %s offsets: %w", what, err)
		}
		out := map[int32]int64{}
		for _, p := range partitions {
			o, ok := listed.Lookup(q.topic, p)
			switch {
			case ok && o.Err == nil:
				out[p] = o.Offset
			case ok && errors.Is(o.Err, kerr.UnknownTopicOrPartition):
				return nil, &browseError{http.StatusNotFound, fmt.Sprintf("topic %q partition %d: %v", q.topic, p, o.Err)}
			case ok:
				return nil, fmt.Errorf("list %s offsets of partition %d: %w", what, p, o.Err)
			default:
				return nil, &browseError{http.StatusNotFound, fmt.Sprintf("topic %q partition %d not found", q.topic, p)}
			}
		}
		return out, nil
	}
	starts, err := list("start", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, q.topic) })
	if err != nil {
		return nil, nil, err
	}
	endList := adm.ListEndOffsets
	if q.committed {
		endList = adm.ListCommittedOffsets // the last stable offset
	}
	ends, err := list("end", func() (kadm.ListedOffsets, error) { return endList(ctx, q.topic) })
	if err != nil {
		return nil, nil, err
	}
	var after map[int32]int64
	if q.fromKind == fromTimestamp {
		if after, err = list("timestamp", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, q.fromValue, q.topic) }); err != nil {
			return nil, nil, err
		}
	}
	// Going back, the window read: K offsets, or with a key filter as many
	// as a page may look at, shared among the partitions.
	window := int64(q.limit)
	if q.key != nil {
		window = max(window, int64(cfg.ScanMaxRecords/len(partitions)))
	}
	var notes []string
	ranges := map[int32]*browseRange{}
	for _, p := range partitions {
		start, end := starts[p], ends[p]
		clamp := func(o int64) int64 { return min(max(o, start), end) }
		var from, to int64
		switch q.fromKind {
		case fromStart:
			from, to = start, end
		case fromOffset:
			from, to = clamp(q.fromValue), end
			if q.fromValue < start {
				notes = append(notes, fmt.Sprintf("offset %d is before partition %d's log start %d: read from %d", q.fromValue, p, start, start))
			}
		case fromTimestamp:
			from, to = clamp(after[p]), end
		case fromEnd:
			to = end
			from = max(start, to-window)
		case fromBefore:
			to = clamp(q.fromValue)
			from = max(start, to-window)
		}
		ranges[p] = &browseRange{part: console.PagePartition{Partition: p, LogStart: start, End: end, ReadFrom: from, ReadTo: to},
			next: from, done: from >= to}
	}
	return ranges, notes, nil
}

// readRanges fetches the ranges not done, offering the matching records
// to rows and every marker to txns, until the page is complete or a bound
// is reached (then page.Stopped says which).
func (s *Server) readRanges(ctx context.Context, q browseQuery, ranges map[int32]*browseRange, cfg BrowseConfig,
	rows *console.Collector, txns *console.TxnOutcomes, page *console.Page) error {
	offsets := map[int32]kgo.Offset{}
	for p, rg := range ranges {
		if !rg.done {
			offsets[p] = kgo.NewOffset().At(rg.part.ReadFrom)
		}
	}
	if len(offsets) == 0 {
		return nil
	}
	isolation := kgo.ReadUncommitted()
	if q.committed {
		isolation = kgo.ReadCommitted()
	}
	cl, err := s.kafkaClient(kgo.ClientID("strata-console-browser"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{q.topic: offsets}),
		kgo.FetchIsolationLevel(isolation), kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(cfg.FetchMaxBytes), kgo.FetchMaxPartitionBytes(cfg.FetchMaxBytes),
		kgo.FetchMaxWait(250*time.Millisecond),
		// The log start moving past from (retention) is an error to show,
		// not a jump to wherever the log starts now.
		kgo.ConsumeResetOffset(kgo.NoResetOffset()))
	if err != nil {
		return err
	}
	defer cl.Close()
	single := q.partition >= 0
	finish := func(rg *browseRange) {
		rg.done = true
		cl.PauseFetchPartitions(map[string][]int32{q.topic: {rg.part.Partition}})
	}
	pending := len(offsets)
	var scannedBytes int64
	seen := false
	for pending > 0 {
		// Before the first record, as long as the page may take (a first
		// read from the bucket can be slow); after, IdleTimeout.
		wait, cancel := ctx, context.CancelFunc(func() {})
		if seen {
			wait, cancel = context.WithTimeout(ctx, cfg.IdleTimeout)
		}
		fetches := cl.PollFetches(wait)
		// Read the wait's state before cancel: after it, Err is always set.
		waited := wait.Err()
		cancel()
		if waited != nil {
			page.Stopped = console.StopTime
			return nil
		}
		fetches.EachError(func(_ string, p int32, err error) {
			if rg := ranges[p]; rg != nil && !rg.done && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				page.Notes = append(page.Notes, fmt.Sprintf("partition %d at offset %d: %v", p, rg.next, err))
				finish(rg)
				pending--
			}
		})
		for it := fetches.RecordIter(); !it.Done(); {
			rec := it.Next()
			rg := ranges[rec.Partition]
			if rg == nil || rg.done || rec.Offset < rg.next {
				continue
			}
			if rec.Offset >= rg.part.ReadTo {
				rg.next = rg.part.ReadTo
				finish(rg)
				pending--
				continue
			}
			seen = true
			rg.next = rec.Offset + 1
			page.Scanned++
			scannedBytes += int64(len(rec.Key) + len(rec.Value))
			if rec.Attrs.IsControl() {
				txns.Note(rec.Partition, rec.ProducerID, rec.Offset, console.ControlOf(rec.Key, rec.Value))
			}
			if q.matches(rec) {
				rows.Add(console.RecordOf(rec, q.decode, q.valueMax))
				rg.matches++
			}
			full := !q.backward() && (rg.matches >= q.limit || single && rows.BytesFull())
			if rg.next >= rg.part.ReadTo || full {
				finish(rg)
				pending--
			}
			switch {
			case page.Scanned >= cfg.ScanMaxRecords:
				page.Stopped = console.StopScanRecords
			case scannedBytes >= cfg.ScanMaxBytes:
				page.Stopped = console.StopScanBytes
			}
			if page.Stopped != "" {
				return nil
			}
		}
	}
	return nil
}

// matches reports whether rec is a row of q's page: with a key filter,
// a record whose key holds it (never a control record).
func (q browseQuery) matches(rec *kgo.Record) bool {
	if q.key == nil {
		return true
	}
	return !rec.Attrs.IsControl() && bytes.Contains(rec.Key, q.key)
}
