package log

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Config){
		"segment.bytes":             func(c *Config) { c.SegmentBytes = 10 },
		"segment.ms":                func(c *Config) { c.SegmentMs = -1 },
		"retention.bytes":           func(c *Config) { c.RetentionBytes = -2 },
		"index.interval.bytes":      func(c *Config) { c.IndexIntervalBytes = -1 },
		"log.flush.interval.ms":     func(c *Config) { c.Flush, c.FlushInterval = FlushInterval, 0 },
		"log.flush":                 func(c *Config) { c.Flush = 7 },
		"producer.id.expiration.ms": func(c *Config) { c.ProducerIDExpiration = -1 },
	} {
		c := DefaultConfig()
		mut(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !bytes.Contains([]byte(err.Error()), []byte(name)) {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
	for _, s := range []string{"always", "interval", "never"} {
		p, err := ParseFlushPolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("ParseFlushPolicy(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParseFlushPolicy("sometimes"); err == nil {
		t.Error("ParseFlushPolicy accepted nonsense")
	}
}

func TestAppendRead(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", testConfig(), nil)
	defer l.Close()
	var want [][]byte
	next := int64(0)
	for i := 0; i < 50; i++ {
		b := mkBatch(t, spec{records: 1 + i%4, ts: int64(1000 + i)})
		res := mustAppend(t, l, b, 3)
		if res.BaseOffset != next || res.LastOffset != next+int64(i%4) || res.Duplicate || res.LogAppendTime != -1 {
			t.Fatalf("append %d: %+v, want base %d", i, res, next)
		}
		next = res.LastOffset + 1
		want = append(want, b)
	}
	if l.LogEndOffset() != next {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), next)
	}
	got := readAll(t, l)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
		h, _ := batch.ParseHeader(got[i])
		if h.PartitionLeaderEpoch != 3 {
			t.Fatalf("batch %d epoch %d", i, h.PartitionLeaderEpoch)
		}
	}
	var size int64
	for _, b := range want {
		size += int64(len(b))
	}
	if l.Size() != size {
		t.Fatalf("Size %d, want %d", l.Size(), size)
	}
}

func TestReadBounds(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", testConfig(), nil)
	defer l.Close()
	var bs [][]byte
	for i := 0; i < 10; i++ { // 10 batches of 3 records: offsets 3i..3i+2
		b := mkBatch(t, spec{records: 3, ts: int64(i)})
		mustAppend(t, l, b, 0)
		bs = append(bs, b)
	}
	one := len(bs[0])
	cat := func(i, j int) []byte { return bytes.Join(bs[i:j], nil) }
	tests := []struct {
		name      string
		offset    int64
		maxBytes  int
		maxOffset int64
		minOne    bool
		want      []byte
		err       error
	}{
		{"first batch", 0, one, 30, false, cat(0, 1), nil},
		{"mid batch starts at its batch", 4, one, 30, false, cat(1, 2), nil},
		{"two batches", 3, 2 * one, 30, false, cat(1, 3), nil},
		{"maxBytes not a multiple", 3, 2*one + one/2, 30, false, cat(1, 3), nil},
		{"too small without minOne", 0, one - 1, 30, false, nil, nil},
		{"too small with minOne", 0, 1, 30, true, cat(0, 1), nil},
		{"maxOffset cuts", 0, 100 * one, 9, false, cat(0, 3), nil},
		{"maxOffset inside a batch excludes it", 0, 100 * one, 10, false, cat(0, 3), nil},
		{"maxOffset beyond end", 27, 100 * one, 1000, false, cat(9, 10), nil},
		{"offset at maxOffset", 9, 100 * one, 9, true, nil, nil},
		{"offset at end", 30, 100 * one, 30, true, nil, nil},
		{"offset past end", 31, 100 * one, 40, true, nil, ErrOffsetOutOfRange},
		{"negative offset", -1, 100 * one, 40, true, nil, ErrOffsetOutOfRange},
	}
	for _, tt := range tests {
		got, err := l.Read(tt.offset, tt.maxBytes, tt.maxOffset, tt.minOne)
		if !errors.Is(err, tt.err) || !bytes.Equal(got, tt.want) {
			t.Errorf("%s: Read = %d bytes, %v; want %d bytes, %v", tt.name, len(got), err, len(tt.want), tt.err)
		}
	}
	// The result belongs to the caller.
	got, _ := l.Read(0, one, 30, false)
	got[30] ^= 0xff
	again, _ := l.Read(0, one, 30, false)
	if !bytes.Equal(again, bs[0]) {
		t.Fatal("Read returned shared memory")
	}
}

func TestRollIndexesAndCleanReopen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 300
	l := openLog(t, vfs.Default, dir, cfg, nil)
	var want [][]byte
	for i := 0; i < 200; i++ {
		b := mkBatch(t, spec{records: 1 + i%3, ts: int64(10_000 + i*7%50), valueSize: 20 + i%40})
		mustAppend(t, l, b, int32(i/50))
		want = append(want, b)
	}
	if l.Segments() < 5 {
		t.Fatalf("only %d segments", l.Segments())
	}
	check := func(l *Log) {
		t.Helper()
		got := readAll(t, l)
		if len(got) != len(want) {
			t.Fatalf("read %d batches, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("batch %d differs", i)
			}
		}
		// Every offset inside every batch finds its batch.
		for _, b := range want {
			h, _ := batch.ParseHeader(b)
			for off := h.BaseOffset; off <= h.LastOffset(); off++ {
				r, err := l.Read(off, 1, l.LogEndOffset(), true)
				if err != nil || !bytes.Equal(r, b) {
					t.Fatalf("Read(%d) = %d bytes %v", off, len(r), err)
				}
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Append(mkBatch(t, spec{}), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, cleanFileName)); err != nil {
		t.Fatalf("no clean mark: %v", err)
	}
	// Sealed segments' index files are Kafka-shaped and agree with memory.
	names, _ := vfs.Default.ReadDir(dir)
	nIndex := 0
	for _, n := range names {
		if filepath.Ext(n) == indexSuffix {
			nIndex++
			b, _ := os.ReadFile(filepath.Join(dir, n))
			if len(b)%offsetEntrySize != 0 {
				t.Fatalf("%s: %d bytes", n, len(b))
			}
		}
	}
	if nIndex < 5 {
		t.Fatalf("%d index files", nIndex)
	}
	l2 := openLog(t, vfs.Default, dir, cfg, nil)
	defer l2.Close()
	if _, err := os.Stat(filepath.Join(dir, cleanFileName)); !os.IsNotExist(err) {
		t.Fatalf("clean mark survives Open: %v", err)
	}
	check(l2)
	if l2.LatestEpoch() != 3 {
		t.Fatalf("LatestEpoch %d", l2.LatestEpoch())
	}
	// Appends continue.
	res := mustAppend(t, l2, mkBatch(t, spec{}), 3)
	if res.BaseOffset != l2.LogEndOffset()-1 {
		t.Fatalf("append after reopen: %+v", res)
	}
}

func TestIndexesRebuiltWhenBad(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 2048
	cfg.IndexIntervalBytes = 100
	l := openLog(t, vfs.Default, dir, cfg, nil)
	var want [][]byte
	for i := 0; i < 60; i++ {
		b := mkBatch(t, spec{ts: int64(i)})
		mustAppend(t, l, b, 0)
		want = append(want, b)
	}
	l.Close()
	// Damage: a missing index, a torn one, and one that points nowhere.
	first := filepath.Join(dir, segmentName(0))
	os.Remove(first + indexSuffix)
	names, _ := vfs.Default.ReadDir(dir)
	var idx []string
	for _, n := range names {
		if filepath.Ext(n) == indexSuffix {
			idx = append(idx, filepath.Join(dir, n))
		}
	}
	os.WriteFile(idx[0], []byte{1, 2, 3}, 0o644)
	os.WriteFile(idx[1], []byte{0, 0, 0, 1, 0, 0, 0, 7}, 0o644)
	l2 := openLog(t, vfs.Default, dir, cfg, nil)
	defer l2.Close()
	got := readAll(t, l2)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if b, err := os.ReadFile(first + indexSuffix); err != nil || len(b) == 0 {
		t.Fatalf("index not rebuilt: %d bytes, %v", len(b), err)
	}
}

func TestSegmentMsRoll(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentMs = 1000 * 1e6 // 1000 ms
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	defer l.Close()
	mustAppend(t, l, mkBatch(t, spec{ts: 5000}), 0)
	mustAppend(t, l, mkBatch(t, spec{ts: 5900}), 0)
	if l.Segments() != 1 {
		t.Fatalf("rolled early: %d", l.Segments())
	}
	mustAppend(t, l, mkBatch(t, spec{ts: 6001}), 0)
	if l.Segments() != 2 {
		t.Fatalf("segment.ms did not roll: %d", l.Segments())
	}
}

func TestAppendRejects(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 200
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	defer l.Close()
	if _, err := l.Append([]byte{1, 2, 3}, 0); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("short = %v", err)
	}
	b := mkBatch(t, spec{})
	if _, err := l.Append(append(b, 0), 0); !errors.Is(err, ErrInvalidBatch) {
		t.Fatalf("trailing byte = %v", err)
	}
	if _, err := l.Append(mkBatch(t, spec{valueSize: 300}), 0); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("too large = %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("LEO moved to %d", l.LogEndOffset())
	}
}

func TestLogAppendTimeReported(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", testConfig(), nil)
	defer l.Close()
	b := mkBatch(t, spec{ts: 10})
	batch.SetLogAppendTime(b, 777)
	if res := mustAppend(t, l, b, 0); res.LogAppendTime != 777 {
		t.Fatalf("LogAppendTime %d", res.LogAppendTime)
	}
}

func TestTimestampLookups(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 150
	l := openLog(t, vfs.NewMem(), "/p", cfg, nil)
	defer l.Close()
	if b, err := l.MaxTimestampBatch(); b != nil || err != nil {
		t.Fatalf("empty MaxTimestampBatch = %v %v", b, err)
	}
	// Timestamps go up and down; the maximum (900) is in the middle.
	tss := []int64{100, 300, 200, 500, 400, 900, 600, 700, 650, 800, 750, 850}
	var bs [][]byte
	for _, ts := range append(tss, tss...) {
		b := mkBatch(t, spec{ts: ts})
		mustAppend(t, l, b, 0)
		bs = append(bs, b)
	}
	firstAtLeast := func(ts int64) []byte {
		for _, b := range bs {
			if h, _ := batch.ParseHeader(b); h.MaxTimestamp >= ts {
				return b
			}
		}
		return nil
	}
	for ts := int64(0); ts <= 1000; ts += 25 {
		got, err := l.FindByTimestamp(ts)
		if err != nil || !bytes.Equal(got, firstAtLeast(ts)) {
			t.Fatalf("FindByTimestamp(%d) = %d bytes %v", ts, len(got), err)
		}
	}
	got, err := l.MaxTimestampBatch()
	if err != nil || !bytes.Equal(got, bs[5]) {
		t.Fatalf("MaxTimestampBatch = %d bytes %v", len(got), err)
	}
}
