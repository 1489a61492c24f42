package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// ErrInjected is the error a FaultyBucket returns when a fault was armed
// without a specific error.
var ErrInjected = errors.New("objstore: injected fault")

// Op names a Bucket operation, for fault injection and metrics labels.
// PutReader is OpPut too.
type Op string

// The Bucket operations.
const (
	OpGet      Op = "get"
	OpGetRange Op = "get_range"
	OpPut      Op = "put"
	OpDelete   Op = "delete"
	OpStat     Op = "stat"
	OpList     Op = "list"
)

// Ops lists every Op, in a fixed order.
var Ops = []Op{OpGet, OpGetRange, OpPut, OpDelete, OpStat, OpList}

// FaultyBucket wraps a Bucket and injects faults that tests arm. All methods
// are safe for concurrent use; faults may be armed while calls are running.
// Close is passed through and never faulted. Injected errors wrap the armed
// error, so errors.Is sees it (arm ErrPreconditionFailed to fake a lost CAS).
type FaultyBucket struct {
	inner Bucket

	mu       sync.Mutex
	calls    map[Op]int           // calls seen so far, per op
	before   map[Op]map[int]error // call number -> error, returned without calling inner
	after    map[Op]map[int]error // call number -> error, returned after inner succeeded
	always   map[Op]error         // every call fails until cleared
	latency  map[Op]time.Duration // added before each call
	truncate int64                // GetRange bodies end after this many bytes; < 0: off
}

var _ Bucket = (*FaultyBucket)(nil)

// NewFaulty wraps inner with no faults armed. Its Close closes inner.
func NewFaulty(inner Bucket) *FaultyBucket {
	f := &FaultyBucket{inner: inner}
	f.Clear()
	f.calls = make(map[Op]int)
	return f
}

func injected(err error) error {
	if err == nil {
		return ErrInjected
	}
	return err
}

// FailNext makes the nth call of op from now (n = 1: the next one) fail with
// err (ErrInjected if nil) without reaching the inner bucket. n < 1 is a
// bug in the test and panics.
func (f *FaultyBucket) FailNext(op Op, n int, err error) {
	f.arm(f.before, op, n, err)
}

// FailNextAfter makes the nth call of op from now reach the inner bucket
// and then, if it succeeded, return err anyway: the "timed out, but the
// write happened" case a retrying caller must survive.
func (f *FaultyBucket) FailNextAfter(op Op, n int, err error) {
	f.arm(f.after, op, n, err)
}

func (f *FaultyBucket) arm(m map[Op]map[int]error, op Op, n int, err error) {
	if n < 1 {
		panic(fmt.Sprintf("objstore: FaultyBucket: call number %d < 1", n))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m[op] == nil {
		m[op] = make(map[int]error)
	}
	m[op][f.calls[op]+n] = injected(err)
}

// FailAlways makes every call of op fail with err (ErrInjected if nil) until
// Clear.
func (f *FaultyBucket) FailAlways(op Op, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.always[op] = injected(err)
}

// SetLatency delays every call of op by d before it runs; 0 removes the
// delay. A cancelled context ends the delay with the context's error.
func (f *FaultyBucket) SetLatency(op Op, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency[op] = d
}

// TruncateRange makes every GetRange body end (with io.EOF, silently) after
// at most keep bytes, like a connection that dropped with the lengths
// unchecked. keep < 0 turns it off.
func (f *FaultyBucket) TruncateRange(keep int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.truncate = keep
}

// Clear disarms every fault. Call counts are kept.
func (f *FaultyBucket) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before = make(map[Op]map[int]error)
	f.after = make(map[Op]map[int]error)
	f.always = make(map[Op]error)
	f.latency = make(map[Op]time.Duration)
	f.truncate = -1
}

// Calls returns how many calls of op the bucket has seen, faulted or not.
func (f *FaultyBucket) Calls(op Op) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// enter counts a call and decides its faults. It returns the error to fail
// with now, and the error to return after the inner call succeeds.
func (f *FaultyBucket) enter(ctx context.Context, op Op) (after error, err error) {
	f.mu.Lock()
	f.calls[op]++
	n := f.calls[op]
	before := f.before[op][n]
	delete(f.before[op], n)
	after = f.after[op][n]
	delete(f.after[op], n)
	if e := f.always[op]; e != nil && before == nil {
		before = e
	}
	delay := f.latency[op]
	f.mu.Unlock()

	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	if before != nil {
		return nil, fmt.Errorf("objstore: faulty %s call %d: %w", op, n, before)
	}
	if after != nil {
		after = fmt.Errorf("objstore: faulty %s call %d (after the call ran): %w", op, n, after)
	}
	return after, nil
}

func (f *FaultyBucket) Get(ctx context.Context, key string) ([]byte, Attributes, error) {
	after, err := f.enter(ctx, OpGet)
	if err != nil {
		return nil, Attributes{}, err
	}
	data, attrs, err := f.inner.Get(ctx, key)
	if err == nil && after != nil {
		return nil, Attributes{}, after
	}
	return data, attrs, err
}

func (f *FaultyBucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	after, err := f.enter(ctx, OpGetRange)
	if err != nil {
		return nil, err
	}
	rc, err := f.inner.GetRange(ctx, key, offset, length)
	if err != nil {
		return nil, err
	}
	if after != nil {
		rc.Close()
		return nil, after
	}
	f.mu.Lock()
	keep := f.truncate
	f.mu.Unlock()
	if keep >= 0 {
		return &truncatedBody{Reader: io.LimitReader(rc, keep), closer: rc}, nil
	}
	return rc, nil
}

type truncatedBody struct {
	io.Reader
	closer io.Closer
}

func (t *truncatedBody) Close() error { return t.closer.Close() }

func (f *FaultyBucket) Put(ctx context.Context, key string, data []byte, opts PutOptions) (string, error) {
	after, err := f.enter(ctx, OpPut)
	if err != nil {
		return "", err
	}
	etag, err := f.inner.Put(ctx, key, data, opts)
	if err == nil && after != nil {
		return "", after
	}
	return etag, err
}

// PutReader shares OpPut with Put: a fault armed for puts hits whichever
// of the two comes next.
func (f *FaultyBucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	after, err := f.enter(ctx, OpPut)
	if err != nil {
		return "", err
	}
	etag, err := f.inner.PutReader(ctx, key, r, size, opts)
	if err == nil && after != nil {
		return "", after
	}
	return etag, err
}

func (f *FaultyBucket) Delete(ctx context.Context, key string) error {
	after, err := f.enter(ctx, OpDelete)
	if err != nil {
		return err
	}
	if err := f.inner.Delete(ctx, key); err != nil {
		return err
	}
	return after
}

func (f *FaultyBucket) Stat(ctx context.Context, key string) (Attributes, error) {
	after, err := f.enter(ctx, OpStat)
	if err != nil {
		return Attributes{}, err
	}
	attrs, err := f.inner.Stat(ctx, key)
	if err == nil && after != nil {
		return Attributes{}, after
	}
	return attrs, err
}

func (f *FaultyBucket) List(ctx context.Context, prefix string, fn func(key string, attrs Attributes) error) error {
	after, err := f.enter(ctx, OpList)
	if err != nil {
		return err
	}
	if err := f.inner.List(ctx, prefix, fn); err != nil {
		return err
	}
	return after
}

// Close closes the inner bucket.
func (f *FaultyBucket) Close() error { return f.inner.Close() }
