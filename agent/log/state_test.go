package log

import (
	"errors"
	"math"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/log/producers"
	"github.com/strata-streaming/strata/internal/vfs"
)

func TestEpochCacheEndOffsetFor(t *testing.T) {
	c := epochCache{}
	if e, o := c.endOffsetFor(0, 10); e != -1 || o != -1 {
		t.Fatalf("empty: %d %d", e, o)
	}
	for _, e := range []epochEntry{{1, 0}, {3, 10}, {4, 25}} {
		c.assign(e.epoch, e.start)
	}
	if c.assign(2, 30) {
		t.Fatal("assigned an older epoch")
	}
	const leo = 40
	tests := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1},
		{0, 0, 0},   // below every epoch: itself and the first start
		{1, 1, 10},  // known: start of the next
		{2, 1, 10},  // unknown in between: floor epoch
		{3, 3, 25},  // known
		{4, 4, leo}, // latest: log end
		{5, -1, -1}, // above the latest
	}
	for _, tt := range tests {
		e, o := c.endOffsetFor(tt.epoch, leo)
		if e != tt.wantEpoch || o != tt.wantEnd {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tt.epoch, e, o, tt.wantEpoch, tt.wantEnd)
		}
	}
	d := epochCache{entries: append([]epochEntry(nil), c.entries...)}
	d.truncateFromStart(12)
	if len(d.entries) != 2 || d.entries[0] != (epochEntry{3, 12}) {
		t.Fatalf("truncateFromStart: %v", d.entries)
	}
	c.truncateFromEnd(25)
	if c.latest() != 3 {
		t.Fatalf("truncateFromEnd: %v", c.entries)
	}
	dec, err := decodeEpochs(c.encode())
	if err != nil || len(dec.entries) != 2 || dec.entries[1] != c.entries[1] {
		t.Fatalf("round trip %v %v", dec, err)
	}
	bad := c.encode()
	bad[7] ^= 1
	if _, err := decodeEpochs(bad); !errors.Is(err, errBadStateFile) {
		t.Fatalf("corrupt checkpoint accepted: %v", err)
	}
}

func TestIdempotence(t *testing.T) {
	type step struct {
		name string
		s    spec
		err  error
		dup  bool
		base int64 // expected base offset (original one for duplicates)
	}
	steps := []step{
		{"first batch of a new producer may start anywhere", spec{pid: 7, epoch: 0, seq: 40, records: 2}, nil, false, 0},
		{"next in sequence", spec{pid: 7, epoch: 0, seq: 42, records: 3}, nil, false, 2},
		{"retry of the first", spec{pid: 7, epoch: 0, seq: 40, records: 2}, nil, true, 0},
		{"retry of the second", spec{pid: 7, epoch: 0, seq: 42, records: 3}, nil, true, 2},
		{"gap", spec{pid: 7, epoch: 0, seq: 46}, ErrOutOfOrderSequence, false, 0},
		{"overlap that is no retry", spec{pid: 7, epoch: 0, seq: 44}, ErrOutOfOrderSequence, false, 0},
		{"in order again", spec{pid: 7, epoch: 0, seq: 45}, nil, false, 5},
		{"new epoch must start at 0", spec{pid: 7, epoch: 1, seq: 46}, ErrOutOfOrderSequence, false, 0},
		{"new epoch at 0", spec{pid: 7, epoch: 1, seq: 0}, nil, false, 6},
		{"old epoch is fenced", spec{pid: 7, epoch: 0, seq: 46}, ErrInvalidProducerEpoch, false, 0},
		{"old retry after bump is fenced", spec{pid: 7, epoch: 0, seq: 45}, ErrInvalidProducerEpoch, false, 0},
		{"another producer is independent", spec{pid: 8, epoch: 5, seq: 0}, nil, false, 7},
		{"sequence wraps", spec{pid: 9, epoch: 0, seq: math.MaxInt32 - 1, records: 2}, nil, false, 8},
		{"after wrap comes 0", spec{pid: 9, epoch: 0, seq: 0}, nil, false, 10},
		{"no producer: never checked", spec{}, nil, false, 11},
	}
	for _, restart := range []string{"none", "clean", "crash"} {
		t.Run(restart, func(t *testing.T) {
			mem := vfs.NewMem()
			l := openLog(t, mem, "/p", testConfig(), nil)
			for i, st := range steps {
				if i == 6 { // restart in the middle; producer state must survive
					switch restart {
					case "clean":
						l.Close()
						l = openLog(t, mem, "/p", testConfig(), nil)
					case "crash":
						l.Sync()
						abandon(l)
						l = openLog(t, mem.CrashClone(), "/p", testConfig(), nil)
					}
				}
				leo := l.LogEndOffset()
				res, err := l.Append(mkBatch(t, st.s), 0)
				if !errors.Is(err, st.err) {
					t.Fatalf("%s: err %v, want %v", st.name, err, st.err)
				}
				if err != nil {
					if l.LogEndOffset() != leo {
						t.Fatalf("%s: rejected batch moved LEO", st.name)
					}
					continue
				}
				if res.Duplicate != st.dup || res.BaseOffset != st.base {
					t.Fatalf("%s: %+v, want dup %v base %d", st.name, res, st.dup, st.base)
				}
				if st.dup && l.LogEndOffset() != leo {
					t.Fatalf("%s: duplicate was written", st.name)
				}
			}
			l.Close()
		})
	}
}

func TestIdempotenceWindowOfFive(t *testing.T) {
	l := openLog(t, vfs.NewMem(), "/p", testConfig(), nil)
	defer l.Close()
	for i := int32(0); i < 7; i++ {
		mustAppend(t, l, mkBatch(t, spec{pid: 1, seq: i}), 0)
	}
	// Batches 2..6 are cached; 0 and 1 fell out of the window.
	if res, err := l.Append(mkBatch(t, spec{pid: 1, seq: 2}), 0); err != nil || !res.Duplicate || res.BaseOffset != 2 {
		t.Fatalf("dup of 2: %+v %v", res, err)
	}
	if _, err := l.Append(mkBatch(t, spec{pid: 1, seq: 1}), 0); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("retry beyond the window: %v", err)
	}
}

// The snapshot file: the producers payload in the checkpoint framing, so
// that any flipped or missing byte is refused. (The payload's own tests
// are in package producers.)
func TestProducerSnapshotRoundTrip(t *testing.T) {
	ps := producers.New()
	for _, h := range []batch.Header{
		{ProducerID: 3, ProducerEpoch: 2, BaseSequence: 1, BaseOffset: 10, LastOffsetDelta: 1, MaxTimestamp: 99},
		{ProducerID: 3, ProducerEpoch: 2, BaseSequence: 3, BaseOffset: 12, MaxTimestamp: 98},
		{ProducerID: 1, ProducerEpoch: 0, BaseSequence: -1, BaseOffset: 13, MaxTimestamp: -1},
	} {
		ps.Update(&h, batch.Marker{Type: -1})
	}
	b := encodeSnapshot(ps, 42)
	off, got, err := decodeSnapshot(b)
	p3, _ := got.Producer(3)
	if err != nil || off != 42 || got.Len() != 2 || len(p3.Batches) != 2 || p3.Batches[1] != (producers.Batch{FirstSeq: 3, LastSeq: 3, FirstOffset: 12, LastOffset: 12}) || p3.Epoch != 2 {
		t.Fatalf("round trip: %d %+v %v", off, p3, err)
	}
	for i := range b {
		c := append([]byte(nil), b...)
		c[i] ^= 0x40
		if _, _, err := decodeSnapshot(c); err == nil {
			t.Fatalf("flipped byte %d accepted", i)
		}
	}
	for n := range b {
		if _, _, err := decodeSnapshot(b[:n]); err == nil {
			t.Fatalf("truncated to %d accepted", n)
		}
	}
}

func TestProducerExpiry(t *testing.T) {
	clock := &fakeClock{ms: 10_000}
	cfg := testConfig()
	cfg.ProducerIDExpiration = 1000 * 1e6 // 1 s
	l := openLog(t, vfs.NewMem(), "/p", cfg, clock)
	defer l.Close()
	mustAppend(t, l, mkBatch(t, spec{pid: 5, seq: 0, ts: 10_000}), 0)
	clock.ms = 11_500
	if _, err := l.ApplyRetention(); err != nil {
		t.Fatal(err)
	}
	// Expired: the producer is unknown, so a gap is accepted.
	if _, err := l.Append(mkBatch(t, spec{pid: 5, seq: 9, ts: 11_500}), 0); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}
