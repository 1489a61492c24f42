package metadata

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Cache is an agent's copy of something the store keeps that requests
// consult on every call: the ACLs (agent/acl), the client quotas
// (agent/quota), the SCRAM users (agent/users). Load reads the copy from
// memory and never waits on the store; Refresh brings it in line, from
// the agent's reconcile loop (every interval, and at once when gossip
// says another agent changed it) and from Changed, right after this
// agent wrote it.
//
// Load may be called from any goroutine at any time. Refreshes run one
// at a time, so a slow read cannot replace the copy a later one made.
// The value a Load returns is never changed: Read makes a new one.
type Cache[V any] struct {
	// Read makes the next copy from the store, given the current one
	// (the zero value before the first read), which it returns when
	// nothing changed (its version, an ETag say, is the same). A value
	// returned with an error is kept as well: Read may keep the old
	// contents of what failed and the new contents of the rest. On a
	// failure with nothing new, return prev.
	Read func(ctx context.Context, prev V) (V, error)
	// Announce, if set, tells the other agents that this one changed
	// the stored value (a gossip broadcast), so they refresh at once.
	Announce func() error
	// What names the copy in log lines ("ACLs", "client quotas").
	What   string
	Logger *slog.Logger // default slog.Default()

	mu  sync.Mutex // held by Refresh
	cur atomic.Pointer[V]
}

// changedTimeout bounds the re-read of Changed, which runs on a request's
// path after a write succeeded.
const changedTimeout = 10 * time.Second

// Load returns the current copy: the zero value before the first Refresh.
func (c *Cache[V]) Load() V {
	if p := c.cur.Load(); p != nil {
		return *p
	}
	var zero V
	return zero
}

// Refresh replaces the copy with what Read makes of the store.
func (c *Cache[V]) Refresh(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, err := c.Read(ctx, c.Load())
	c.cur.Store(&next)
	return err
}

// Changed is called after this agent wrote the stored value: it reads it
// back at once, so that the writer's next request sees its change, and
// announces the change. The write succeeded, so failures are only logged:
// the reconcile loop catches up.
func (c *Cache[V]) Changed() {
	ctx, cancel := context.WithTimeout(context.Background(), changedTimeout)
	defer cancel()
	logger := c.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if err := c.Refresh(ctx); err != nil {
		logger.Warn("re-read after a change", "what", c.What, "err", err)
	}
	if c.Announce == nil {
		return
	}
	if err := c.Announce(); err != nil {
		logger.Warn("announce a change", "what", c.What, "err", err)
	}
}

// Listed is a Cache value made from one list object (ReadList): what
// build made of its entries, and the ETag they were read at.
type Listed[V any] struct {
	Value V
	ETag  string
}

// ReadListWith is a Cache's Read for the list at key: the entries are
// read whole (one GET) and built into a value only when their ETag
// changed.
func ReadListWith[E, V any](s *Store, key string, build func([]E) V) func(context.Context, Listed[V]) (Listed[V], error) {
	return func(ctx context.Context, prev Listed[V]) (Listed[V], error) {
		entries, etag, err := ReadList[E](ctx, s, key)
		switch {
		case err != nil:
			return prev, err
		case etag != "" && etag == prev.ETag:
			return prev, nil
		}
		return Listed[V]{Value: build(entries), ETag: etag}, nil
	}
}
