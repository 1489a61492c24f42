package diskless

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/sharedobj"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		flag string
	}{
		{"agent", func(c *Config) { c.Agent = -1 }, "agent id"},
		{"interval zero", func(c *Config) { c.CommitInterval = 0 }, "--diskless-commit-interval"},
		{"interval past timeout", func(c *Config) { c.CommitInterval = c.CommitTimeout }, "--diskless-commit-interval"},
		{"bytes zero", func(c *Config) { c.CommitBytes = 0 }, "--diskless-commit-bytes"},
		{"bytes huge", func(c *Config) { c.CommitBytes = 2 << 30; c.BufferMaxBytes = 4 << 30 }, "--diskless-commit-bytes"},
		{"buffer below commit", func(c *Config) { c.BufferMaxBytes = c.CommitBytes - 1 }, "--diskless-buffer-max-bytes"},
		{"uploads zero", func(c *Config) { c.UploadsInFlight = 0 }, "--diskless-uploads-in-flight"},
		{"timeout zero", func(c *Config) { c.CommitTimeout = 0 }, "--diskless-commit-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.flag)
			}
		})
	}
}

// TestBufferCuts scripts the cut decisions: each step adds a batch of
// size bytes to partition part at time at (ms), and says whether the
// buffer is cut before it, whether it is full after it, and when the
// buffer falls due then.
func TestBufferCuts(t *testing.T) {
	const commitBytes, interval = 100, 250 * time.Millisecond
	t0 := time.UnixMilli(1_000_000)
	steps := []struct {
		at, size  int64
		part      int32
		cutBefore bool
		full      bool
		dueMs     int64 // after the add (and a cut when full), -1: empty
	}{
		{at: 0, size: 40, part: 1, dueMs: 250},
		{at: 10, size: 40, part: 2, dueMs: 250},                  // due stays with the oldest
		{at: 20, size: 30, part: 1, cutBefore: true, dueMs: 270}, // 110 > 100: a new object from it
		{at: 30, size: 70, part: 3, full: true, dueMs: -1},       // exactly 100: cut after it
		{at: 40, size: 500, part: 4, full: true, dueMs: -1},      // larger than commitBytes: alone
		{at: 50, size: 10, part: 4, dueMs: 300},
		{at: 60, size: 500, part: 5, cutBefore: true, full: true, dueMs: -1},
	}
	b := newBuffer(commitBytes, interval)
	var cuts [][]int64 // sizes of each cut object
	cut := func() {
		runs, kept, _ := b.take()
		var sizes []int64
		for _, r := range runs {
			for _, p := range r.batches {
				sizes = append(sizes, p.size)
			}
		}
		if kept == 0 {
			t.Fatal("cut an empty buffer")
		}
		cuts = append(cuts, sizes)
	}
	for i, s := range steps {
		p := &pending{key: partKey{partition: s.part}, size: s.size}
		if got := b.cutBefore(p); got != s.cutBefore {
			t.Fatalf("step %d: cutBefore = %v, want %v", i, got, s.cutBefore)
		}
		if s.cutBefore {
			cut()
		}
		b.add(t0.Add(time.Duration(s.at)*time.Millisecond), p)
		if got := b.full(); got != s.full {
			t.Fatalf("step %d: full = %v, want %v", i, got, s.full)
		}
		if s.full {
			cut()
		}
		due, ok := b.due()
		switch {
		case s.dueMs < 0 && ok:
			t.Fatalf("step %d: due at %v, want an empty buffer", i, due)
		case s.dueMs >= 0 && (!ok || due.Sub(t0) != time.Duration(s.dueMs)*time.Millisecond):
			t.Fatalf("step %d: due %v (%v), want %d ms", i, due.Sub(t0), ok, s.dueMs)
		}
	}
	want := "[[40 40] [30 70] [500] [10] [500]]"
	if got := fmt.Sprint(cuts); got != want {
		t.Fatalf("objects %s, want %s", got, want)
	}
}

// TestBufferTakeDropsAbandoned checks that a batch whose waiter gave up
// while buffered goes into no object, and that a run left empty is gone.
func TestBufferTakeDropsAbandoned(t *testing.T) {
	b := newBuffer(1000, time.Second)
	now := time.Now()
	a1 := &pending{key: partKey{partition: 1}, size: 10, raw: []byte("a")}
	a2 := &pending{key: partKey{partition: 1}, size: 20, raw: []byte("b"), dropped: true}
	c1 := &pending{key: partKey{partition: 2}, size: 30, raw: []byte("c"), dropped: true}
	for _, p := range []*pending{a1, a2, c1} {
		b.add(now, p)
	}
	runs, kept, dropped := b.take()
	if len(runs) != 1 || len(runs[0].batches) != 1 || runs[0].batches[0] != a1 || kept != 10 || dropped != 50 {
		t.Fatalf("take = %d runs, kept %d, dropped %d; want partition 1's first batch, 10, 50", len(runs), kept, dropped)
	}
	if a2.raw != nil || c1.raw != nil {
		t.Fatal("dropped batches keep their bytes")
	}
	if !b.empty() {
		t.Fatal("buffer not empty after take")
	}
}

// TestPlace checks the Placed of each batch against the encoded bytes:
// every position and size slices out exactly that batch.
func TestPlace(t *testing.T) {
	var runs []*run
	// Partitions in an order Encode will sort differently.
	for _, part := range []int32{7, 2, 5} {
		r := &run{key: partKey{topicID: [16]byte{byte(part % 2)}, partition: part}}
		for i := range int(part)%3 + 1 {
			raw := testBatch(t, int64(part), int32(i), strings.Repeat("x", int(part)*10+i))
			r.batches = append(r.batches, &pending{key: r.key, raw: raw, size: int64(len(raw))})
		}
		runs = append(runs, r)
	}
	id, err := sharedobj.NewID(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	data, h, err := sharedobj.Encode(id, 3, 42, parts(runs))
	if err != nil {
		t.Fatal(err)
	}
	placed := place(runs, h)
	var last Placed
	for i, p := range placed {
		got := data[int64(h.Size())+p.placed.Position:][:p.placed.Size]
		if !bytes.Equal(got, p.raw) {
			t.Fatalf("batch %d (%x/%d at %d): bytes differ", i, p.placed.TopicID, p.placed.Partition, p.placed.Position)
		}
		if i > 0 && p.placed.Position != last.Position+int64(last.Size) {
			t.Fatalf("batch %d at %d, the one before ends at %d: not in data order", i, p.placed.Position, last.Position+int64(last.Size))
		}
		last = p.placed
	}
	if len(placed) != 2+3+3 {
		t.Fatalf("%d batches placed, want 8", len(placed))
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{0, 0}, {1, 50 * time.Millisecond}, {2, 100 * time.Millisecond}, {3, 200 * time.Millisecond},
		{6, 1600 * time.Millisecond}, {7, 2 * time.Second}, {100, 2 * time.Second},
	} {
		if got := backoff(tc.failures); got != tc.want {
			t.Errorf("backoff(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}
