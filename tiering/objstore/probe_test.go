package objstore

import (
	"context"
	"errors"
	"testing"
)

// ignoring is a bucket that drops the conditions of every Put, as some
// S3-compatible stores do.
type ignoring struct{ Bucket }

func (i ignoring) Put(ctx context.Context, key string, data []byte, _ PutOptions) (string, error) {
	return i.Bucket.Put(ctx, key, data, PutOptions{})
}

// TestCheckConditionalWrites: a store that honours conditions passes and
// keeps no probe object; one that ignores them is refused.
func TestCheckConditionalWrites(t *testing.T) {
	ctx := context.Background()
	b := NewMem()
	if err := CheckConditionalWrites(ctx, b, "probe/"); err != nil {
		t.Fatalf("mem store: %v", err)
	}
	left := 0
	b.List(ctx, "probe/", func(string, Attributes) error { left++; return nil })
	if left != 0 {
		t.Errorf("%d probe objects left behind", left)
	}
	if err := CheckConditionalWrites(ctx, ignoring{b}, "probe/"); !errors.Is(err, ErrNoConditionalWrites) {
		t.Errorf("a store ignoring conditions: %v, want ErrNoConditionalWrites", err)
	}
}
