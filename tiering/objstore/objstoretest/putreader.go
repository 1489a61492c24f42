package objstoretest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// minPartSize is S3's smallest part of a multipart upload (but the last).
const minPartSize = 5 << 20

// LargeReaderSize is the size of the objects PutReaderLarge writes: more
// than two parts of S3's minimum part size (5 MiB), so an S3 bucket whose
// part size is set to that minimum uploads it in three parts, the last one
// short.
const LargeReaderSize = 2*minPartSize + 1<<20 + 4321

func mustPutReader(t *testing.T, b objstore.Bucket, key string, r io.ReaderAt, size int64, opts objstore.PutOptions) string {
	t.Helper()
	etag, err := b.PutReader(t.Context(), key, r, size, opts)
	if err != nil {
		t.Fatalf("PutReader(%q, %d bytes): %v", key, size, err)
	}
	if etag == "" {
		t.Fatalf("PutReader(%q) returned an empty ETag", key)
	}
	return etag
}

// testPutReader stores objects of a few sizes from readers that hold more
// than size bytes: only the first size bytes are the object.
func testPutReader(t *testing.T, b objstore.Bucket) {
	r := rng(t)
	for _, size := range []int{0, 1, 4096, 70 << 10} {
		key := "pr/obj-" + strconv.Itoa(size)
		src := randomBytes(r, size+100)
		etag := mustPutReader(t, b, key, bytes.NewReader(src), int64(size), objstore.PutOptions{})
		got, attrs := mustGet(t, b, key)
		if !bytes.Equal(got, src[:size]) {
			t.Fatalf("size %d: Get returned %d bytes, not the first %d of the reader", size, len(got), size)
		}
		if attrs.ETag != etag || attrs.Size != int64(size) {
			t.Fatalf("size %d: attrs %+v, want ETag %q", size, attrs, etag)
		}
		st, err := b.Stat(t.Context(), key)
		if err != nil || st.ETag != etag || st.Size != int64(size) {
			t.Fatalf("size %d: Stat = %+v, %v, want ETag %q", size, st, err, etag)
		}
	}
}

// testPutReaderConditions repeats the IfAbsent and IfMatch rules through
// PutReader.
func testPutReaderConditions(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	put := func(key, content string, opts objstore.PutOptions) (string, error) {
		return b.PutReader(ctx, key, bytes.NewReader([]byte(content)), int64(len(content)), opts)
	}
	e1, err := put("prc", "first", objstore.PutOptions{IfAbsent: true})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := put("prc", "again", objstore.PutOptions{IfAbsent: true}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("second create: err = %v, want precondition failed", err)
	}
	wantContent(t, b, "prc", []byte("first"))
	e2, err := put("prc", "second", objstore.PutOptions{IfMatch: e1})
	if err != nil {
		t.Fatalf("IfMatch with the current ETag: %v", err)
	}
	if e2 == e1 {
		t.Fatal("conditional overwrite kept the ETag")
	}
	if _, err := put("prc", "stale", objstore.PutOptions{IfMatch: e1}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("stale ETag: err = %v, want precondition failed", err)
	}
	wantContent(t, b, "prc", []byte("second"))
	if _, err := put("prc-missing", "x", objstore.PutOptions{IfMatch: e2}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("IfMatch on a missing key: err = %v, want precondition failed", err)
	}
	wantNotFound(t, b, "prc-missing")
	if _, err := put("prc-both", "x", objstore.PutOptions{IfAbsent: true, IfMatch: e2}); err == nil {
		t.Fatal("PutReader with IfAbsent and IfMatch succeeded")
	}
	wantNotFound(t, b, "prc-both")
	if _, err := b.PutReader(ctx, "prc-negative", bytes.NewReader(nil), -1, objstore.PutOptions{}); err == nil {
		t.Fatal("PutReader with a negative size succeeded")
	}
	wantNotFound(t, b, "prc-negative")
}

// testPutReaderLarge writes objects that span several parts on S3 (with
// its part size at the minimum), with and without conditions; the
// condition must hold for the object as a whole.
func testPutReaderLarge(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	r := rng(t)
	const key = "large/segment-reader.log"
	v1 := randomBytes(r, LargeReaderSize)
	e1 := mustPutReader(t, b, key, bytes.NewReader(v1), LargeReaderSize, objstore.PutOptions{IfAbsent: true})
	got, attrs := mustGet(t, b, key)
	if attrs.Size != LargeReaderSize || attrs.ETag != e1 || !bytes.Equal(got, v1) {
		t.Fatalf("large PutReader: got %d bytes, attrs %+v (want ETag %q), content equal: %v", len(got), attrs, e1, bytes.Equal(got, v1))
	}
	// A range across the first part boundary.
	boundary := int64(minPartSize)
	part, err := readRange(t, b, key, boundary-10, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(part, v1[boundary-10:boundary+10]) {
		t.Fatal("range across a part boundary differs")
	}

	v2 := randomBytes(r, LargeReaderSize)
	if _, err := b.PutReader(ctx, key, bytes.NewReader(v2), LargeReaderSize, objstore.PutOptions{IfAbsent: true}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("large create over an existing key: err = %v, want precondition failed", err)
	}
	if _, err := b.PutReader(ctx, key, bytes.NewReader(v2), LargeReaderSize, objstore.PutOptions{IfMatch: e1 + "x"}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("large put with a wrong ETag: err = %v, want precondition failed", err)
	}
	if got, attrs := mustGet(t, b, key); attrs.ETag != e1 || !bytes.Equal(got, v1) {
		t.Fatal("a failed conditional put changed the object")
	}
	e2 := mustPutReader(t, b, key, bytes.NewReader(v2), LargeReaderSize, objstore.PutOptions{IfMatch: e1})
	if e2 == e1 {
		t.Fatal("large conditional overwrite kept the ETag")
	}
	if got, attrs := mustGet(t, b, key); attrs.ETag != e2 || !bytes.Equal(got, v2) {
		t.Fatal("large conditional overwrite did not store the new content")
	}
}

// failingReaderAt returns err for any read that reaches failAt.
type failingReaderAt struct {
	data   []byte
	failAt int64
	err    error
}

func (f *failingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.failAt {
		return 0, f.err
	}
	return copy(p, f.data[off:]), nil
}

// testPutReaderBadInput: a reader shorter than size or one that fails
// stores nothing, and an existing object stays as it was.
func testPutReaderBadInput(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	data := randomBytes(rng(t), 64<<10)
	_, err := b.PutReader(ctx, "bad/short", bytes.NewReader(data[:1000]), int64(len(data)), objstore.PutOptions{})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("PutReader from a short reader: err = %v, want io.ErrUnexpectedEOF", err)
	}
	wantNotFound(t, b, "bad/short")

	mustPut(t, b, "bad/keep", []byte("old"), objstore.PutOptions{})
	readErr := errors.New("disk says no")
	r := &failingReaderAt{data: data, failAt: 40 << 10, err: readErr}
	if _, err := b.PutReader(ctx, "bad/keep", r, int64(len(data)), objstore.PutOptions{}); !errors.Is(err, readErr) {
		t.Fatalf("PutReader from a failing reader: err = %v, want the reader's error", err)
	}
	wantContent(t, b, "bad/keep", []byte("old"))

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.PutReader(canceled, "bad/canceled", bytes.NewReader(data), int64(len(data)), objstore.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("PutReader with a cancelled context: err = %v", err)
	}
	wantNotFound(t, b, "bad/canceled")
}
