package coordlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/strata-streaming/strata/agent/log/batch"
)

// memLog holds batches of one record each, at offsets from start; Read
// returns at most two batches per call, so Replay must read on.
type memLog struct {
	start   int64
	batches [][]byte
	failAt  int64 // Read at this offset fails (-1: never)
}

func (m *memLog) Append(context.Context, []byte) error { return errors.ErrUnsupported }
func (m *memLog) LogStartOffset() int64                { return m.start }
func (m *memLog) HighWatermark() int64                 { return m.start + int64(len(m.batches)) }
func (m *memLog) Read(offset int64, _ int) ([]byte, error) {
	if offset == m.failAt {
		return nil, errors.New("disk error")
	}
	i := int(offset - m.start)
	var out []byte
	for _, b := range m.batches[i:min(i+2, len(m.batches))] {
		out = append(out, b...)
	}
	return out, nil
}

func newMemLog(t *testing.T, start int64, n int) *memLog {
	m := &memLog{start: start, failAt: -1}
	for i := range n {
		opts := batch.DefaultBuildOptions()
		opts.BaseOffset = start + int64(i)
		raw, err := batch.Build(opts, []batch.Record{{Value: fmt.Appendf(nil, "v%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		m.batches = append(m.batches, raw)
	}
	return m
}

// TestReplay: every batch from the log start to the high watermark, once,
// in order, across reads; a read error or fn's error stops it.
func TestReplay(t *testing.T) {
	l := newMemLog(t, 10, 5)
	var got []string
	err := Replay(l, func(h batch.Header, raw []byte) error {
		recs, err := Records(raw)
		if err != nil {
			return err
		}
		got = append(got, fmt.Sprintf("%d:%s", h.BaseOffset, recs[0].Value))
		return nil
	})
	if want := []string{"10:v0", "11:v1", "12:v2", "13:v3", "14:v4"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("replay: %v, %v; want %v", got, err, want)
	}
	l.failAt = 12
	if err := Replay(l, func(batch.Header, []byte) error { return nil }); err == nil {
		t.Fatal("a failed read was not reported")
	}
	stop := errors.New("stop")
	if err := Replay(newMemLog(t, 0, 3), func(batch.Header, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fn's error: %v", err)
	}
}
