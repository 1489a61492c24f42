package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MemBucket is an in-memory Bucket for tests. One mutex guards the map;
// stored slices are copies of what the caller passed and are never modified,
// so readers may share them without copying again.
//
// ETags are a per-bucket generation counter, so every successful Put yields
// a new ETag, even for identical content.
type MemBucket struct {
	mu         sync.Mutex
	objects    map[string]memObject
	generation uint64
	closed     bool
}

type memObject struct {
	data  []byte
	attrs Attributes
}

var _ Bucket = (*MemBucket)(nil)

// NewMem returns an empty in-memory bucket.
func NewMem() *MemBucket {
	return &MemBucket{objects: make(map[string]memObject)}
}

// lookup checks the context, the key and the closed flag, then returns the
// object. The caller holds no lock; lookup takes it.
func (m *MemBucket) lookup(ctx context.Context, key string) (memObject, error) {
	if err := ctx.Err(); err != nil {
		return memObject{}, err
	}
	if err := ValidateKey(key); err != nil {
		return memObject{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return memObject{}, ErrClosed
	}
	obj, ok := m.objects[key]
	if !ok {
		return memObject{}, fmt.Errorf("mem: %q: %w", key, ErrNotFound)
	}
	return obj, nil
}

// Get returns a copy of the object.
func (m *MemBucket) Get(ctx context.Context, key string) ([]byte, Attributes, error) {
	obj, err := m.lookup(ctx, key)
	if err != nil {
		return nil, Attributes{}, err
	}
	return bytes.Clone(obj.data), obj.attrs, nil
}

// GetRange returns a reader over the requested bytes; the range rules are
// in the package doc.
func (m *MemBucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	obj, err := m.lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	start, end, err := clampRange(key, int64(len(obj.data)), offset, length)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(obj.data[start:end])), nil
}

// Put stores a copy of data.
func (m *MemBucket) Put(ctx context.Context, key string, data []byte, opts PutOptions) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := opts.validate(); err != nil {
		return "", err
	}
	stored := bytes.Clone(data)
	if stored == nil {
		stored = []byte{}
	}
	return m.store(key, stored, opts)
}

// PutReader reads the object into memory, then stores it as Put does.
func (m *MemBucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if err := opts.validate(); err != nil {
		return "", err
	}
	if err := checkSize(key, size); err != nil {
		return "", err
	}
	data, err := readAllAt(r, size)
	if err != nil {
		return "", fmt.Errorf("mem: put %q: %w", key, err)
	}
	return m.store(key, data, opts)
}

// store checks opts and stores data, which the bucket now owns.
func (m *MemBucket) store(key string, stored []byte, opts PutOptions) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return "", ErrClosed
	}
	cur, exists := m.objects[key]
	if err := opts.check(key, exists, cur.attrs.ETag); err != nil {
		return "", err
	}
	m.generation++
	attrs := Attributes{
		Size:         int64(len(stored)),
		ETag:         "mem-" + strconv.FormatUint(m.generation, 16),
		LastModified: time.Now(),
	}
	m.objects[key] = memObject{data: stored, attrs: attrs}
	return attrs.ETag, nil
}

// Delete removes the object if it exists.
func (m *MemBucket) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := ValidateKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	delete(m.objects, key)
	return nil
}

// Stat returns the object's attributes.
func (m *MemBucket) Stat(ctx context.Context, key string) (Attributes, error) {
	obj, err := m.lookup(ctx, key)
	if err != nil {
		return Attributes{}, err
	}
	return obj.attrs, nil
}

// List snapshots the matching keys under the lock and calls fn without it,
// so fn may call back into the bucket.
func (m *MemBucket) List(ctx context.Context, prefix string, fn func(key string, attrs Attributes) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	type entry struct {
		key   string
		attrs Attributes
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	var entries []entry
	for key, obj := range m.objects {
		if strings.HasPrefix(key, prefix) {
			entries = append(entries, entry{key, obj.attrs})
		}
	}
	m.mu.Unlock()
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.key, b.key) })
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e.key, e.attrs); err != nil {
			return err
		}
	}
	return nil
}

// Close drops the contents. Later calls return ErrClosed; a second Close is
// a no-op.
func (m *MemBucket) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.objects = nil
	return nil
}
