package objstore_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/objstore/objstoretest"
)

func TestPrefixAcceptance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Bucket {
		b, err := objstore.WithPrefix(newMem(t), "/tenant/one/")
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

func TestPrefixIsolation(t *testing.T) {
	ctx := t.Context()
	shared := objstore.NewMem()
	defer shared.Close()
	a, err := objstore.WithPrefix(shared, "a")
	if err != nil {
		t.Fatal(err)
	}
	ab, err := objstore.WithPrefix(shared, "ab") // "a" is a string prefix of "ab"
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "k", []byte("from a"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ab.Put(ctx, "k", []byte("from ab"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if data, _, err := shared.Get(ctx, "a/k"); err != nil || string(data) != "from a" {
		t.Fatalf("inner a/k = %q, %v", data, err)
	}
	var keys []string
	if err := a.List(ctx, "", func(k string, _ objstore.Attributes) error {
		keys = append(keys, k)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"k"}) {
		t.Fatalf("List through prefix a = %q, want [k]", keys)
	}
	// A key cannot climb out of its prefix.
	if _, _, err := a.Get(ctx, "../ab/k"); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Fatalf("Get(../ab/k) = %v, want ErrInvalidKey", err)
	}
	if _, err := objstore.WithPrefix(shared, "bad/../prefix"); !errors.Is(err, objstore.ErrInvalidKey) {
		t.Fatalf("WithPrefix of an invalid prefix: %v", err)
	}
	if same, err := objstore.WithPrefix(shared, "/"); err != nil || same != objstore.Bucket(shared) {
		t.Fatalf("empty prefix should return the bucket itself: %v", err)
	}
}
