package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSplitKey(t *testing.T) {
	tests := []struct {
		line, sep  string
		key, value string
		keyNil     bool
	}{
		{"k\tv", "\t", "k", "v", false},
		{"no separator", "\t", "", "no separator", true},
		{"\tv", "\t", "", "v", false},
		{"k\t", "\t", "k", "", false},
		{"a\tb\tc", "\t", "a", "b\tc", false},
		{"k::v::w", "::", "k", "v::w", false},
		{"k\tv", "", "", "k\tv", true},
		{"", "\t", "", "", true},
	}
	for _, tc := range tests {
		k, v := splitKey([]byte(tc.line), []byte(tc.sep))
		if string(k) != tc.key || string(v) != tc.value || (k == nil) != tc.keyNil {
			t.Errorf("splitKey(%q, %q) = %q (nil %v), %q; want %q (nil %v), %q",
				tc.line, tc.sep, k, k == nil, v, tc.key, tc.keyNil, tc.value)
		}
	}
}

func TestReadLine(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int
		want    []string
		wantErr error
	}{
		{"lines", "a\nbb\n", 10, []string{"a", "bb"}, nil},
		{"last line without newline", "a\nbb", 10, []string{"a", "bb"}, nil},
		{"crlf", "a\r\nb\r\n", 10, []string{"a", "b"}, nil},
		{"empty lines are records", "\n\nx\n", 10, []string{"", "", "x"}, nil},
		{"empty input", "", 10, nil, nil},
		{"exactly max", "12345\n12345\r\n12345", 5, []string{"12345", "12345", "12345"}, nil},
		{"too long", "ok\n123456\n", 5, []string{"ok"}, errLineTooLong},
		{"too long last line", "123456", 5, nil, errLineTooLong},
		{"much longer than the buffer", "x\n" + strings.Repeat("y", 100<<10) + "\n", 64 << 10, []string{"x"}, errLineTooLong},
		{"longer than the buffer but allowed", strings.Repeat("z", 70<<10) + "\n", 80 << 10, []string{strings.Repeat("z", 70<<10)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(strings.NewReader(tc.in), 16)
			var got []string
			var err error
			for range 100 { // bounded: no test has more lines
				var line []byte
				line, err = readLine(br, tc.max)
				if err != nil {
					break
				}
				got = append(got, string(line))
			}
			if tc.wantErr == nil && err.Error() != "EOF" || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("lines = %.80q, want %.80q", got, tc.want)
			}
		})
	}
}

// fakeSink completes some promises at once on its own goroutines and the
// rest in Flush, as a real client may; values starting with "fail" fail.
type fakeSink struct {
	mu      sync.Mutex
	records []*kgo.Record
	queued  []func()
	wg      sync.WaitGroup
}

var _ recordSink = (*fakeSink)(nil)

func (s *fakeSink) Produce(_ context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
	var err error
	if bytes.HasPrefix(r.Value, []byte("fail")) {
		err = fmt.Errorf("record %d: %w", len(s.records), kerr.MessageTooLarge)
	}
	done := func() { promise(r, err) }
	if len(s.records)%3 == 0 {
		s.wg.Go(done)
		return
	}
	s.queued = append(s.queued, done)
}

func (s *fakeSink) Flush(context.Context) error {
	s.mu.Lock()
	queued := s.queued
	s.queued = nil
	s.mu.Unlock()
	for _, done := range queued {
		s.wg.Go(done)
	}
	s.wg.Wait()
	return nil
}

func TestProduceLines(t *testing.T) {
	in := "k1\tv1\nplain\n\tempty-key\nfail-a\nk5\tfail-b\nlast"
	sink := &fakeSink{}
	res, err := produceLines(context.Background(), sink, strings.NewReader(in), "orders", 2, []byte("\t"), 100)
	if err != nil {
		t.Fatalf("read error: %v", err)
	}
	if res.produced != 4 || res.failed != 2 {
		t.Errorf("produced %d failed %d, want 4 and 2", res.produced, res.failed)
	}
	if !errors.Is(res.firstErr, kerr.MessageTooLarge) {
		t.Errorf("first error %v, want MESSAGE_TOO_LARGE", res.firstErr)
	}
	var got []string
	for _, r := range sink.records {
		if r.Topic != "orders" || r.Partition != 2 {
			t.Errorf("record %q went to %s/%d", r.Value, r.Topic, r.Partition)
		}
		got = append(got, fmt.Sprintf("%q=%q", r.Key, r.Value))
	}
	want := `"k1"="v1" ""="plain" ""="empty-key" ""="fail-a" "k5"="fail-b" ""="last"`
	if strings.Join(got, " ") != want {
		t.Errorf("records:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	if sink.records[1].Key != nil || sink.records[2].Key == nil {
		t.Error("a line without separator must have a nil key, one starting with it an empty key")
	}
}

func TestProduceLinesStopsAtLongLine(t *testing.T) {
	sink := &fakeSink{}
	res, err := produceLines(context.Background(), sink, strings.NewReader("a\nb\n"+strings.Repeat("x", 50)+"\nnever\n"), "t", -1, nil, 10)
	if !errors.Is(err, errLineTooLong) {
		t.Fatalf("error = %v, want errLineTooLong", err)
	}
	// What was read before the long line is still delivered and counted.
	if res.produced != 2 || res.failed != 0 || len(sink.records) != 2 {
		t.Errorf("produced %d failed %d sent %d, want 2 0 2", res.produced, res.failed, len(sink.records))
	}
	if sink.records[0].Partition != 0 || sink.records[0].Key != nil {
		t.Error("with partition -1 the record must leave the partition to the partitioner")
	}
}

func TestProducerOpts(t *testing.T) {
	cf := &clientFlags{bootstrap: "127.0.0.1:1", timeout: 1e9}
	good := []produceFlags{
		{acks: "all", compression: "none", partition: -1},
		{acks: "-1", compression: "zstd", partition: 0},
		{acks: "1", compression: "lz4", partition: -1},
		{acks: "0", compression: "gzip", partition: -1, noIdempotence: true},
		{acks: "all", compression: "SNAPPY", partition: -1, noIdempotence: true},
	}
	for _, pf := range good {
		opts, err := pf.producerOpts(cf)
		if err != nil {
			t.Errorf("%+v: %v", pf, err)
			continue
		}
		// franz-go refuses idempotence without acks=all at NewClient time,
		// so building a client proves acks and idempotence agree.
		cl, err := cf.newKafkaClient(opts...)
		if err != nil {
			t.Errorf("%+v: NewClient: %v", pf, err)
			continue
		}
		cl.Close()
	}
	if _, err := (&produceFlags{acks: "2", compression: "none"}).producerOpts(cf); !errors.Is(err, errBadAcks) {
		t.Errorf("acks=2: got %v", err)
	}
	if _, err := (&produceFlags{acks: "all", compression: "brotli"}).producerOpts(cf); !errors.Is(err, errBadCompression) {
		t.Errorf("compression=brotli: got %v", err)
	}
}
