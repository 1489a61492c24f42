package objstoretest

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func listKeys(t *testing.T, b objstore.Bucket, prefix string) []string {
	t.Helper()
	keys := []string{}
	err := b.List(t.Context(), prefix, func(key string, _ objstore.Attributes) error {
		keys = append(keys, key)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

func testList(t *testing.T, b objstore.Bucket) {
	// No key is both an object and a prefix of others, which a file tree
	// cannot store; '-' and '.' sort before '/', which a naive directory
	// walk gets wrong.
	keys := []string{"x/b/z", "x/a/bb/c", "y", "x/ab", "x/a/b", "x/a.d", "x/a-c"}
	etags := map[string]string{}
	for i, k := range keys {
		etags[k] = mustPut(t, b, k, bytes.Repeat([]byte{'k'}, i+1), objstore.PutOptions{})
	}
	sorted := slices.Sorted(slices.Values(keys))

	// Attributes come with every key.
	err := b.List(t.Context(), "", func(key string, attrs objstore.Attributes) error {
		i := slices.Index(keys, key)
		if i < 0 {
			t.Errorf("List returned unknown key %q", key)
			return nil
		}
		if attrs.Size != int64(i+1) || attrs.ETag != etags[key] {
			t.Errorf("List attrs of %q = %+v, want size %d ETag %q", key, attrs, i+1, etags[key])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", sorted},
		{"x/", sorted[:len(sorted)-1]},
		{"x/a", []string{"x/a-c", "x/a.d", "x/a/b", "x/a/bb/c", "x/ab"}},
		{"x/a/", []string{"x/a/b", "x/a/bb/c"}},
		{"x/a/b", []string{"x/a/b", "x/a/bb/c"}},
		{"x/a/bb", []string{"x/a/bb/c"}},
		{"x/b/z", []string{"x/b/z"}},
		{"y", []string{"y"}},
		{"x/a/bb/c/d", []string{}},
		{"nothing", []string{}},
	} {
		if got := listKeys(t, b, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func testListStops(t *testing.T, b objstore.Bucket) {
	for _, k := range []string{"l/1", "l/2", "l/3", "l/4"} {
		mustPut(t, b, k, []byte(k), objstore.PutOptions{})
	}
	stop := errors.New("stop here")
	var seen []string
	err := b.List(t.Context(), "l/", func(key string, _ objstore.Attributes) error {
		seen = append(seen, key)
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("List returned %v, want the callback's error", err)
	}
	if !slices.Equal(seen, []string{"l/1", "l/2"}) {
		t.Fatalf("List called back with %q after the error", seen)
	}
}

func testDelete(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	mustPut(t, b, "del/a/obj", []byte("x"), objstore.PutOptions{})
	mustPut(t, b, "del/keep", []byte("y"), objstore.PutOptions{})
	if err := b.Delete(ctx, "del/a/obj"); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, b, "del/a/obj")
	if _, err := b.Stat(ctx, "del/a/obj"); !objstore.IsNotFound(err) {
		t.Fatalf("Stat after delete: %v", err)
	}
	if got := listKeys(t, b, "del/"); !slices.Equal(got, []string{"del/keep"}) {
		t.Fatalf("List after delete = %q", got)
	}
	if err := b.Delete(ctx, "del/a/obj"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if err := b.Delete(ctx, "never/existed"); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}
	// The emptied prefix is usable again.
	mustPut(t, b, "del/a/new", []byte("z"), objstore.PutOptions{})
	wantContent(t, b, "del/a/new", []byte("z"))
}
