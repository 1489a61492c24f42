package cache

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testwait"
)

// TestOneLoadForConcurrentMisses: many readers of a missing key share one
// load; afterwards the key is a hit.
func TestOneLoadForConcurrentMisses(t *testing.T) {
	var hits, misses, loads atomic.Int64
	c, err := New(1<<20, Options{ItemBytes: 1 << 10, OnHit: func() { hits.Add(1) }, OnMiss: func() { misses.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	release := make(chan struct{})
	load := func(ctx context.Context) ([]byte, error) {
		loads.Add(1)
		<-release
		return []byte("chunk"), nil
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			v, err := c.Get(context.Background(), "k", load)
			if err != nil || !bytes.Equal(v, []byte("chunk")) {
				t.Errorf("Get = %q, %v", v, err)
			}
		})
	}
	// Every reader has missed, so each has joined the load or will find
	// its value: one that joins after it ends finds the key cached.
	testwait.Until(t, 10*time.Second, func() bool { return misses.Load() == 10 }, "10 misses (%d)", misses.Load())
	close(release)
	wg.Wait()
	if loads.Load() != 1 {
		t.Errorf("%d loads for concurrent misses, want 1", loads.Load())
	}
	if _, err := c.Get(context.Background(), "k", load); err != nil || hits.Load() != 1 || loads.Load() != 1 {
		t.Errorf("second Get: err %v, hits %d, loads %d", err, hits.Load(), loads.Load())
	}
}

// TestCallerTimeoutStillWarms: a caller that stops waiting gets its
// context's error, and the load finishes and fills the cache anyway.
func TestCallerTimeoutStillWarms(t *testing.T) {
	c, err := New(1<<20, Options{ItemBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	proceed := make(chan struct{})
	slow := func(ctx context.Context) ([]byte, error) {
		<-proceed // the load outlives its caller
		return []byte("late"), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "k", slow); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with a short deadline: %v", err)
	}
	close(proceed)
	testwait.Until(t, 10*time.Second, func() bool { return c.Loading() == 0 }, "the abandoned load to end")
	never := func(context.Context) ([]byte, error) { return nil, errors.New("loaded twice") }
	if v, err := c.Get(context.Background(), "k", never); err != nil || string(v) != "late" {
		t.Fatalf("value not cached by the abandoned load: %q, %v", v, err)
	}
}

// TestLoadErrorIsNotCached: a failed load is retried by the next Get.
func TestLoadErrorIsNotCached(t *testing.T) {
	c, err := New(1<<20, Options{ItemBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	boom := errors.New("503")
	if _, err := c.Get(context.Background(), "k", func(context.Context) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if v, err := c.Get(context.Background(), "k", func(context.Context) ([]byte, error) { return []byte("ok"), nil }); err != nil || string(v) != "ok" {
		t.Fatalf("retry after an error: %q, %v", v, err)
	}
}

// TestSequentialScanHitsWhenFull: once the cache is full, a reader moving
// through new keys still finds each key right after it was loaded (the
// window), where ristretto alone would refuse to admit it.
func TestSequentialScanHitsWhenFull(t *testing.T) {
	c, err := New(64<<10, Options{ItemBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var loads atomic.Int64
	value := make([]byte, 4<<10)
	load := func(context.Context) ([]byte, error) { loads.Add(1); return value, nil }
	for i := range 200 {
		key := "chunk-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		for range 4 { // four reads of each chunk, as 1 MiB fetches of a 4 MiB chunk
			if _, err := c.Get(context.Background(), key, load); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := loads.Load(); n != 200 {
		t.Errorf("%d loads for 200 chunks read four times each, want 200", n)
	}
}

// TestLoadingCountsAPrefetchAtOnce: a Prefetch holds its load slot when it
// returns, so a test (or a caller draining the cache) that sees Loading
// at 0 knows every prefetch it started has ended.
func TestLoadingCountsAPrefetchAtOnce(t *testing.T) {
	c, err := New(1<<20, Options{ItemBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	release := make(chan struct{})
	c.Prefetch("k", func(context.Context) ([]byte, error) {
		<-release
		return []byte("v"), nil
	})
	if n := c.Loading(); n != 1 {
		t.Fatalf("Loading right after Prefetch = %d, want 1", n)
	}
	close(release)
	testwait.Until(t, 10*time.Second, func() bool { return c.Loading() == 0 }, "the prefetch to end (%d loading)", c.Loading())
	if v, ok := c.lookup("k"); !ok || string(v) != "v" {
		t.Fatalf("prefetched value: %q, %v", v, ok)
	}
}
