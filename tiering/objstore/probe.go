package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrNoConditionalWrites: the store accepted a write whose condition
// failed. Some S3-compatible stores (older Ceph, some gateways) ignore
// If-None-Match and If-Match; Strata's metadata relies on them (CAS).
var ErrNoConditionalWrites = errors.New("objstore: the store ignores conditional writes (If-None-Match, If-Match)")

// CheckConditionalWrites writes a probe object under probePrefix, checks
// that a second create-once write and a write with a wrong ETag both fail
// with ErrPreconditionFailed, and deletes the probe. A store that lets them
// through would let two agents both win a compare-and-swap.
func CheckConditionalWrites(ctx context.Context, b Bucket, probePrefix string) error {
	var id [8]byte
	rand.Read(id[:])
	key := probePrefix + hex.EncodeToString(id[:])
	etag, err := b.Put(ctx, key, []byte("probe"), PutOptions{IfAbsent: true})
	if err != nil {
		return fmt.Errorf("objstore: probe conditional writes: %w", err)
	}
	defer b.Delete(context.WithoutCancel(ctx), key)
	if _, err := b.Put(ctx, key, []byte("again"), PutOptions{IfAbsent: true}); !IsPreconditionFailed(err) {
		return fmt.Errorf("%w: a second create-once write of %s answered %v", ErrNoConditionalWrites, key, err)
	}
	if _, err := b.Put(ctx, key, []byte("again"), PutOptions{IfMatch: etag + "x"}); !IsPreconditionFailed(err) {
		return fmt.Errorf("%w: a write of %s with a wrong ETag answered %v", ErrNoConditionalWrites, key, err)
	}
	return nil
}
