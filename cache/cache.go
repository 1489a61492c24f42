// Package cache keeps chunks of remote segment objects in memory
// (docs/design.md §7), in a ristretto cache bounded in bytes. Concurrent misses
// on one key make one load; a load runs detached from the caller that
// started it (a fetch that stops waiting still warms the cache for the
// next); Prefetch loads ahead for sequential readers.
//
// Ristretto admits a new item only if it looks more popular than what it
// would evict, which a chunk read once, by a reader moving through a
// segment, never does once the cache is full. So the last few loaded
// values also sit in a small LRU window (a tenth of the cache's bytes, at
// least one value), and a sequential reader finds the chunk it, or its
// prefetch, just loaded. At most MaxLoads loads run at once; a prefetch
// that finds them all busy is dropped.
package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dgraph-io/ristretto/v2"
	"golang.org/x/sync/singleflight"
)

var errClosed = errors.New("cache: closed")

// Loader fetches the value of a key that is not cached.
type Loader func(ctx context.Context) ([]byte, error)

// Options are a cache's optional hooks and limits.
type Options struct {
	// ItemBytes is the typical value size, used to size the admission
	// counters (default 4 MiB).
	ItemBytes int64
	// LoadTimeout bounds one load (default 1 minute).
	LoadTimeout time.Duration
	// MaxLoads bounds the loads running at once (default 16).
	MaxLoads int
	// OnHit and OnMiss count lookups (metrics).
	OnHit, OnMiss func()
}

// Cache maps keys to immutable byte slices. Safe for concurrent use.
type Cache struct {
	rc      *ristretto.Cache[string, []byte]
	flight  singleflight.Group
	opts    Options
	closing chan struct{}

	loads chan struct{} // a slot per running load

	// rcMu keeps Close from freeing ristretto under a load finishing late.
	rcMu   sync.RWMutex
	closed bool

	mu          sync.Mutex
	window      []entry // most recent last
	windowBytes int64
	windowMax   int64
}

type entry struct {
	key   string
	value []byte
}

// New returns a cache holding at most about maxBytes of values.
func New(maxBytes int64, opts Options) (*Cache, error) {
	if opts.ItemBytes <= 0 {
		opts.ItemBytes = 4 << 20
	}
	if opts.LoadTimeout <= 0 {
		opts.LoadTimeout = time.Minute
	}
	if opts.MaxLoads <= 0 {
		opts.MaxLoads = 16
	}
	if opts.OnHit == nil {
		opts.OnHit = func() {}
	}
	if opts.OnMiss == nil {
		opts.OnMiss = func() {}
	}
	if maxBytes <= 0 {
		return nil, fmt.Errorf("cache: size %d must be positive", maxBytes)
	}
	items := max(maxBytes/opts.ItemBytes, 1)
	rc, err := ristretto.NewCache(&ristretto.Config[string, []byte]{
		NumCounters: max(items*10, 1000), MaxCost: maxBytes, BufferItems: 64,
	})
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Cache{rc: rc, opts: opts, closing: make(chan struct{}), loads: make(chan struct{}, opts.MaxLoads), windowMax: maxBytes / 10}, nil
}

// Get returns the value of key, loading it on a miss. The returned slice
// is shared: callers must not modify it.
func (c *Cache) Get(ctx context.Context, key string, load Loader) ([]byte, error) {
	if v, ok := c.lookup(key); ok {
		c.opts.OnHit()
		return v, nil
	}
	c.opts.OnMiss()
	ch := c.flight.DoChan(key, func() (any, error) {
		select {
		case c.loads <- struct{}{}:
		case <-c.closing:
			return nil, errClosed
		}
		defer func() { <-c.loads }()
		return c.load(key, load)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]byte), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load runs a loader detached from any caller and stores its result.
func (c *Cache) load(key string, load Loader) ([]byte, error) {
	if v, ok := c.lookup(key); ok {
		return v, nil // stored while this call waited to start
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.LoadTimeout)
	defer cancel()
	go func() {
		select {
		case <-c.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	v, err := load(ctx)
	if err != nil {
		return nil, err
	}
	c.remember(key, v)
	c.rcMu.RLock()
	if !c.closed {
		c.rc.Set(key, v, int64(len(v)))
		c.rc.Wait()
	}
	c.rcMu.RUnlock()
	return v, nil
}

func (c *Cache) lookup(key string) ([]byte, bool) {
	c.rcMu.RLock()
	v, ok := []byte(nil), false
	if !c.closed {
		v, ok = c.rc.Get(key)
	}
	c.rcMu.RUnlock()
	if ok {
		return v, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.window) - 1; i >= 0; i-- {
		if c.window[i].key == key {
			return c.window[i].value, true
		}
	}
	return nil, false
}

// remember puts a loaded value in the window, dropping the oldest ones
// beyond its byte budget.
func (c *Cache) remember(key string, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.window = append(c.window, entry{key, v})
	c.windowBytes += int64(len(v))
	for len(c.window) > 1 && c.windowBytes > c.windowMax {
		c.windowBytes -= int64(len(c.window[0].value))
		c.window[0] = entry{}
		c.window = c.window[1:]
	}
}

// Loading is how many loads hold one of the MaxLoads slots now. Prefetch
// takes its slot before it returns, so once Loading is 0 every load a
// finished Get or Prefetch call started has ended.
func (c *Cache) Loading() int { return len(c.loads) }

// Prefetch starts loading key in the background unless it is cached or
// already loading.
func (c *Cache) Prefetch(key string, load Loader) {
	if _, ok := c.lookup(key); ok {
		return
	}
	select {
	case c.loads <- struct{}{}:
	default:
		return // busy: a reader that needs the key will load it
	}
	ch := c.flight.DoChan(key, func() (any, error) { return c.load(key, load) })
	go func() {
		<-ch
		<-c.loads
	}()
}

// Close stops loads in flight and frees the cache.
func (c *Cache) Close() {
	select {
	case <-c.closing:
		return
	default:
	}
	close(c.closing)
	c.rcMu.Lock()
	c.closed = true
	c.rc.Close()
	c.rcMu.Unlock()
	c.mu.Lock()
	c.window, c.windowBytes = nil, 0
	c.mu.Unlock()
}
