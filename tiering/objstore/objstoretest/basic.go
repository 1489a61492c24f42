package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func testRoundTrip(t *testing.T, b objstore.Bucket) {
	r := rng(t)
	data := randomBytes(r, 4096)
	etag := mustPut(t, b, "obj", data, objstore.PutOptions{})
	got, attrs := mustGet(t, b, "obj")
	if !bytes.Equal(got, data) {
		t.Fatal("Get returned different bytes than were put")
	}
	if attrs.ETag != etag || attrs.Size != int64(len(data)) {
		t.Fatalf("Get attrs = %+v, want ETag %q size %d", attrs, etag, len(data))
	}
	// The returned slice belongs to the caller: changing it changes nothing
	// stored, and neither does changing the slice given to Put.
	got[0] ^= 0xff
	data[1] ^= 0xff
	again, _ := mustGet(t, b, "obj")
	if again[0] == got[0] || again[1] == data[1] {
		t.Fatal("bucket shares memory with a caller's slice")
	}

	mustPut(t, b, "empty", []byte{}, objstore.PutOptions{})
	empty, attrs := mustGet(t, b, "empty")
	if len(empty) != 0 || attrs.Size != 0 {
		t.Fatalf("empty object: got %d bytes, size %d", len(empty), attrs.Size)
	}
}

func testMissing(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	wantNotFound(t, b, "missing")
	if _, err := b.Stat(ctx, "missing"); !objstore.IsNotFound(err) {
		t.Fatalf("Stat: err = %v, want not found", err)
	}
	if rc, err := b.GetRange(ctx, "missing", 0, -1); !objstore.IsNotFound(err) {
		if rc != nil {
			rc.Close()
		}
		t.Fatalf("GetRange: err = %v, want not found", err)
	}
	// A prefix of existing keys is not itself an object.
	mustPut(t, b, "dir/child", []byte("x"), objstore.PutOptions{})
	wantNotFound(t, b, "dir")
}

func testStat(t *testing.T, b objstore.Bucket) {
	before := time.Now()
	etag := mustPut(t, b, "s/obj", []byte("hello, stat"), objstore.PutOptions{})
	attrs, err := b.Stat(t.Context(), "s/obj")
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Size != 11 || attrs.ETag != etag {
		t.Fatalf("Stat = %+v, want size 11, ETag %q", attrs, etag)
	}
	// Remote clocks differ from ours; allow a wide window, but a zero or
	// absurd time is a bug.
	if attrs.LastModified.IsZero() || attrs.LastModified.Sub(before).Abs() > time.Hour {
		t.Fatalf("LastModified = %v, put at %v", attrs.LastModified, before)
	}
}

func readRange(t *testing.T, b objstore.Bucket, key string, offset, length int64) ([]byte, error) {
	t.Helper()
	rc, err := b.GetRange(t.Context(), key, offset, length)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("GetRange(%d, %d): read: %v", offset, length, err)
	}
	return data, nil
}

func testGetRange(t *testing.T, b objstore.Bucket) {
	data := []byte(strings.Repeat("0123456789", 10)) // 100 bytes
	mustPut(t, b, "r", data, objstore.PutOptions{})
	for _, tc := range []struct {
		name           string
		offset, length int64
		want           []byte
	}{
		{"middle", 10, 20, data[10:30]},
		{"whole", 0, -1, data},
		{"to end", 90, -1, data[90:]},
		{"clamped length", 90, 50, data[90:]},
		{"last byte", 99, 1, data[99:]},
		{"zero length", 5, 0, []byte{}},
	} {
		got, err := readRange(t, b, "r", tc.offset, tc.length)
		if err != nil {
			t.Fatalf("%s: GetRange(%d, %d): %v", tc.name, tc.offset, tc.length, err)
		}
		if !bytes.Equal(got, tc.want) {
			t.Fatalf("%s: GetRange(%d, %d) = %q, want %q", tc.name, tc.offset, tc.length, got, tc.want)
		}
	}
	if _, err := readRange(t, b, "r", 101, 1); !errors.Is(err, objstore.ErrInvalidRange) {
		t.Fatalf("GetRange past the end: err = %v, want ErrInvalidRange", err)
	}
	if _, err := readRange(t, b, "r", 500, -1); !errors.Is(err, objstore.ErrInvalidRange) {
		t.Fatalf("GetRange far past the end: err = %v, want ErrInvalidRange", err)
	}
}

func testOverwrite(t *testing.T, b objstore.Bucket) {
	e1 := mustPut(t, b, "o", []byte("version one"), objstore.PutOptions{})
	e2 := mustPut(t, b, "o", []byte("version two!"), objstore.PutOptions{})
	if e1 == e2 {
		t.Fatalf("overwrite kept ETag %q", e1)
	}
	got, attrs := mustGet(t, b, "o")
	if string(got) != "version two!" || attrs.ETag != e2 || attrs.Size != 12 {
		t.Fatalf("after overwrite: %q %+v, want %q ETag %q", got, attrs, "version two!", e2)
	}
}

func testLargeObject(t *testing.T, b objstore.Bucket) {
	const size = 8 << 20
	data := randomBytes(rng(t), size)
	mustPut(t, b, "large/segment.log", data, objstore.PutOptions{})
	got, attrs := mustGet(t, b, "large/segment.log")
	if attrs.Size != size || !bytes.Equal(got, data) {
		t.Fatalf("large object: got %d bytes (size %d), content equal: %v", len(got), attrs.Size, bytes.Equal(got, data))
	}
	part, err := readRange(t, b, "large/segment.log", 3<<20+17, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(part, data[3<<20+17:4<<20+17]) {
		t.Fatal("range of a large object differs")
	}
}

func testDeepKeys(t *testing.T, b objstore.Bucket) {
	var parts []string
	for i := range 16 {
		parts = append(parts, "level"+strconv.Itoa(i))
	}
	deep := strings.Join(parts, "/") + "/obj.json"
	mustPut(t, b, deep, []byte(`{"deep":true}`), objstore.PutOptions{IfAbsent: true})
	wantContent(t, b, deep, []byte(`{"deep":true}`))
	if got := listKeys(t, b, "level0/level1/"); !slices.Equal(got, []string{deep}) {
		t.Fatalf("List = %q, want [%q]", got, deep)
	}
	if err := b.Delete(t.Context(), deep); err != nil {
		t.Fatal(err)
	}
	if got := listKeys(t, b, "level0/"); len(got) != 0 {
		t.Fatalf("List after delete = %q", got)
	}
	mustPut(t, b, "level0/level1/shallow", []byte("s"), objstore.PutOptions{})
	wantContent(t, b, "level0/level1/shallow", []byte("s"))
}

func testInvalidKeys(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	for _, key := range []string{
		"", "/abs", "a/../b", "..", "a/./b", ".", `a\b`, "a//b", "trailing/",
		objstore.ReservedPrefix + "tmp-x", strings.Repeat("k", objstore.MaxKeyBytes+1),
	} {
		if _, err := b.Put(ctx, key, []byte("x"), objstore.PutOptions{}); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Put(%q): err = %v, want ErrInvalidKey", key, err)
		}
		if _, _, err := b.Get(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Get(%q): err = %v, want ErrInvalidKey", key, err)
		}
		if err := b.Delete(ctx, key); !errors.Is(err, objstore.ErrInvalidKey) {
			t.Errorf("Delete(%q): err = %v, want ErrInvalidKey", key, err)
		}
	}
	if got := listKeys(t, b, ""); len(got) != 0 {
		t.Fatalf("rejected keys were stored: %q", got)
	}
}

func testCanceled(t *testing.T, b objstore.Bucket) {
	mustPut(t, b, "c", []byte("x"), objstore.PutOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Put(ctx, "c2", []byte("y"), objstore.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context: err = %v", err)
	}
	wantNotFound(t, b, "c2")
	if _, _, err := b.Get(ctx, "c"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: err = %v", err)
	}
}

func testCloseTwice(t *testing.T, b objstore.Bucket) {
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
