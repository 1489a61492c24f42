package log

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/internal/vfs"
)

// noLimit is the high watermark of a log without replicas: the cleaner
// may clean every sealed segment.
const noLimit = math.MaxInt64

// spec describes a test batch.
type spec struct {
	records   int   // default 1
	ts        int64 // first timestamp; records are 1 ms apart
	valueSize int   // bytes per record value; default 16
	pid       int64 // producer id; 0 means none (-1)
	epoch     int16
	seq       int32
	attrs     int16
}

// mkBatch encodes an uncompressed v2 batch with kmsg and computes its CRC.
func mkBatch(t testing.TB, s spec) []byte {
	t.Helper()
	if s.records == 0 {
		s.records = 1
	}
	if s.valueSize == 0 {
		s.valueSize = 16
	}
	var recs []byte
	for i := 0; i < s.records; i++ {
		r := kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              []byte(fmt.Sprintf("k%d", i)),
			Value:            bytes.Repeat([]byte{byte('a' + i%26)}, s.valueSize),
		}
		body := r.AppendTo(nil)[1:] // encoded with Length 0: one varint byte
		r.Length = int32(len(body))
		recs = r.AppendTo(recs)
	}
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if s.pid != 0 {
		pid, epoch, seq = s.pid, s.epoch, s.seq
	}
	rb := kmsg.RecordBatch{
		FirstOffset: 0, PartitionLeaderEpoch: -1, Magic: 2, Attributes: s.attrs,
		LastOffsetDelta: int32(s.records - 1), FirstTimestamp: s.ts, MaxTimestamp: s.ts + int64(s.records-1),
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(s.records), Records: recs,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	if _, err := batch.Check(b); err != nil {
		t.Fatalf("test batch: %v", err)
	}
	return b
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testLogger logs to the test output when -v is set, for recovery messages.
func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return quietLogger()
}

// fakeClock is a settable clock.
type fakeClock struct{ ms int64 }

func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms) }

func openLog(t testing.TB, fs vfs.FS, dir string, cfg Config, clock *fakeClock) *Log {
	t.Helper()
	opts := Options{FS: fs, Logger: testLogger(t)}
	if clock != nil {
		opts.Now = clock.now
	}
	l, err := Open(dir, cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// abandon drops a log as a killed process would: no sync, no indexes, no
// clean mark; file handles are released.
func abandon(l *Log) {
	l.flusherMu.Lock()
	l.stopFlusherLocked()
	l.flusherMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, s := range l.segs {
		s.retire()
	}
	l.closeOnce.Do(func() {})
}

// mustAppend appends and fails the test on error.
func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) AppendResult {
	t.Helper()
	res, err := l.Append(b, epoch)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return res
}

// readAll reads every batch from the log start to the end, one at a time.
func readAll(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	off := l.LogStartOffset()
	for i := 0; off < l.LogEndOffset(); i++ {
		if i > 1_000_000 {
			t.Fatal("readAll does not terminate")
		}
		b, err := l.Read(off, 1, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		h, err := batch.Check(b)
		if err != nil {
			t.Fatalf("Read(%d) returned a bad batch: %v", off, err)
		}
		out = append(out, b)
		off = h.NextOffset()
	}
	return out
}

func seeded(t testing.TB) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("STRATA_TEST_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (rerun with STRATA_TEST_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

func testConfig() Config {
	c := DefaultConfig()
	c.Flush = FlushNever
	// Test batches carry timestamps near 1970: without this, producer
	// state would expire at every roll.
	c.ProducerIDExpiration = 0
	return c
}
