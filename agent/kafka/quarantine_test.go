package kafka

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/log/batch"
	"github.com/strata-streaming/strata/agent/metadata"
)

// memChecks is DecompressionChecks in memory: W, and every verdict
// recorded, so a test sees what quarantine asked to keep.
type memChecks struct {
	w        int64
	verdicts map[int64]log.CheckVerdict
	recorded int
}

func (c *memChecks) ValidatedFrom() int64 { return c.w }

func (c *memChecks) CheckedVerdict(base int64, crc uint32) (bool, bool) {
	v, ok := c.verdicts[base]
	return ok && v.CRC == crc, v.Bad
}

func (c *memChecks) RecordChecks(_ int64, vs []log.CheckVerdict) error {
	for _, v := range vs {
		c.verdicts[v.Base] = v
		c.recorded++
	}
	return nil
}

// storedBatch builds one batch at base of a record of n bytes (zeros).
func storedBatch(t *testing.T, c batch.Codec, base int64, n int) []byte {
	t.Helper()
	o := batch.DefaultBuildOptions()
	o.Codec, o.BaseOffset = c, base
	raw, err := batch.Build(o, []batch.Record{{Value: make([]byte, n)}})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Below W, a compressed batch over the limit (16 MiB with the default
// max.message.bytes) is replaced by its empty form, the others kept byte
// for byte, a partial batch at the end kept; each batch is checked once.
// At or above W the data is returned as it came, without allocating: the
// whole cost of the feature on the hot path.
func TestQuarantine(t *testing.T) {
	s := New(DefaultConfig(), Backends{}, slog.New(slog.DiscardHandler), nil)
	topic := &Topic{Name: "t", Resolved: metadata.Resolved{MaxMessageBytes: 1 << 20}}
	good := storedBatch(t, batch.CodecGzip, 0, 1<<20)
	bomb := storedBatch(t, batch.CodecGzip, 1, 64<<20)
	plain := storedBatch(t, batch.CodecNone, 2, 10)
	above := storedBatch(t, batch.CodecGzip, 3, 64<<20) // W is 3: checked on append
	var data []byte
	for _, b := range [][]byte{good, bomb, plain, above} {
		data = append(data, b...)
	}
	data = append(data, above[:30]...) // a partial batch, as a size limit cuts

	checks := &memChecks{w: 3, verdicts: map[int64]log.CheckVerdict{}}
	for round := range 2 {
		out := s.quarantine(context.Background(), topic, 0, checks, 0, data)
		empty, _ := batch.Emptied(bomb)
		var want []byte
		for _, b := range [][]byte{good, empty, plain, above, above[:30]} {
			want = append(want, b...)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("round %d: quarantined data differs from good, emptied bomb, plain, above W, partial", round)
		}
		if len(checks.verdicts) != 3 || !checks.verdicts[1].Bad || checks.verdicts[0].Bad || checks.verdicts[2].Bad {
			t.Fatalf("round %d: verdicts %+v, want offsets 0-2 with only 1 bad", round, checks.verdicts)
		}
	}

	// Above W: the same slice back, no allocation.
	from3 := data[len(good)+len(bomb)+len(plain):]
	var out []byte
	if n := testing.AllocsPerRun(100, func() { out = s.quarantine(context.Background(), topic, 0, checks, 0, from3) }); n != 0 {
		t.Errorf("a fetch above W allocated %v times", n)
	}
	if &out[0] != &from3[0] || len(out) != len(from3) {
		t.Error("a fetch above W did not return its data as it came")
	}
}

// A check that cannot get the decompression budget before the fetch's
// deadline ends the answer before that batch: what precedes it is served,
// nothing unchecked is.
func TestQuarantineWaitsForBudget(t *testing.T) {
	s := New(DefaultConfig(), Backends{}, slog.New(slog.DiscardHandler), nil)
	topic := &Topic{Name: "t", Resolved: metadata.Resolved{MaxMessageBytes: 1 << 20}}
	plain := storedBatch(t, batch.CodecNone, 0, 10)
	bomb := storedBatch(t, batch.CodecGzip, 1, 64<<20)
	data := append(append([]byte(nil), plain...), bomb...)
	release, err := s.decompression.acquire(context.Background(), int(s.decompression.size/2)) // all of it
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	checks := &memChecks{w: 10, verdicts: map[int64]log.CheckVerdict{}}
	if out := s.quarantine(ctx, topic, 0, checks, 0, data); !bytes.Equal(out, plain) {
		t.Fatalf("without budget: %d bytes served, want the %d before the unchecked batch", len(out), len(plain))
	}
	if _, ok := checks.verdicts[1]; ok {
		t.Error("a verdict was kept for a batch that was not checked")
	}
}
