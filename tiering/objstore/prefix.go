package objstore

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// prefixBucket confines a Bucket to the keys under one prefix, so several
// users (clusters, tests) can share a bucket without seeing each other.
type prefixBucket struct {
	inner  Bucket
	prefix string // ends with "/"
}

var _ Bucket = (*prefixBucket)(nil)

// WithPrefix returns a Bucket whose key k is inner's key prefix+"/"+k. The
// prefix is a directory-like path: leading and trailing slashes are trimmed
// and the rest must be a valid key. An empty prefix returns inner itself.
// The returned bucket owns inner: its Close closes inner.
func WithPrefix(inner Bucket, prefix string) (Bucket, error) {
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return inner, nil
	}
	if err := ValidateKey(prefix); err != nil {
		return nil, fmt.Errorf("objstore: key prefix: %w", err)
	}
	return &prefixBucket{inner: inner, prefix: prefix + "/"}, nil
}

// full maps a key to inner's key. The key is validated on its own, so a
// ".." cannot climb out of the prefix.
func (p *prefixBucket) full(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return p.prefix + key, nil
}

func (p *prefixBucket) Get(ctx context.Context, key string) ([]byte, Attributes, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, Attributes{}, err
	}
	return p.inner.Get(ctx, k)
}

func (p *prefixBucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	k, err := p.full(key)
	if err != nil {
		return nil, err
	}
	return p.inner.GetRange(ctx, k, offset, length)
}

func (p *prefixBucket) Put(ctx context.Context, key string, data []byte, opts PutOptions) (string, error) {
	k, err := p.full(key)
	if err != nil {
		return "", err
	}
	return p.inner.Put(ctx, k, data, opts)
}

func (p *prefixBucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	k, err := p.full(key)
	if err != nil {
		return "", err
	}
	return p.inner.PutReader(ctx, k, r, size, opts)
}

func (p *prefixBucket) Delete(ctx context.Context, key string) error {
	k, err := p.full(key)
	if err != nil {
		return err
	}
	return p.inner.Delete(ctx, k)
}

func (p *prefixBucket) Stat(ctx context.Context, key string) (Attributes, error) {
	k, err := p.full(key)
	if err != nil {
		return Attributes{}, err
	}
	return p.inner.Stat(ctx, k)
}

func (p *prefixBucket) List(ctx context.Context, prefix string, fn func(key string, attrs Attributes) error) error {
	return p.inner.List(ctx, p.prefix+prefix, func(key string, attrs Attributes) error {
		rel, ok := strings.CutPrefix(key, p.prefix)
		if !ok {
			// The inner bucket broke List's contract; that is a bug, not
			// bad input.
			panic(fmt.Sprintf("objstore: List(%q) returned key %q outside the prefix", p.prefix+prefix, key))
		}
		return fn(rel, attrs)
	})
}

func (p *prefixBucket) Close() error { return p.inner.Close() }
