package objstoretest

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func testIfAbsent(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	etag := mustPut(t, b, "once", []byte("first"), objstore.PutOptions{IfAbsent: true})
	_, err := b.Put(ctx, "once", []byte("second"), objstore.PutOptions{IfAbsent: true})
	if !objstore.IsPreconditionFailed(err) {
		t.Fatalf("second create: err = %v, want precondition failed", err)
	}
	got, attrs := mustGet(t, b, "once")
	if string(got) != "first" || attrs.ETag != etag {
		t.Fatalf("after lost create: %q %q, want %q %q", got, attrs.ETag, "first", etag)
	}
	// After a delete the key can be created again.
	if err := b.Delete(ctx, "once"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, b, "once", []byte("third"), objstore.PutOptions{IfAbsent: true})
	wantContent(t, b, "once", []byte("third"))
}

func testIfMatch(t *testing.T, b objstore.Bucket) {
	ctx := t.Context()
	e1 := mustPut(t, b, "cas", []byte("v1"), objstore.PutOptions{})
	e2 := mustPut(t, b, "cas", []byte("v2"), objstore.PutOptions{IfMatch: e1})
	if e2 == e1 {
		t.Fatal("conditional overwrite kept the ETag")
	}
	wantContent(t, b, "cas", []byte("v2"))

	if _, err := b.Put(ctx, "cas", []byte("stale"), objstore.PutOptions{IfMatch: e1}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("stale ETag: err = %v, want precondition failed", err)
	}
	wantContent(t, b, "cas", []byte("v2"))

	if _, err := b.Put(ctx, "nokey", []byte("x"), objstore.PutOptions{IfMatch: e2}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("IfMatch on a missing key: err = %v, want precondition failed", err)
	}
	wantNotFound(t, b, "nokey")
}

func testConflictingOptions(t *testing.T, b objstore.Bucket) {
	_, err := b.Put(t.Context(), "both", []byte("x"), objstore.PutOptions{IfAbsent: true, IfMatch: "x"})
	if err == nil {
		t.Fatal("Put with IfAbsent and IfMatch succeeded")
	}
	wantNotFound(t, b, "both")
}

// testConcurrentCAS proves conditional writes lose no update: writers
// increment one counter with read + IfMatch retry loops, and the final count
// is the number of increments.
func testConcurrentCAS(t *testing.T, b objstore.Bucket) {
	const writers, perWriter, maxAttempts = 4, 20, 1000
	ctx := t.Context()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	attempts := make([]int, writers)
	for w := range writers {
		wg.Go(func() {
			for range perWriter {
				n, err := CASIncrement(ctx, b, "counter", maxAttempts)
				attempts[w] += n
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := ReadCounter(ctx, b, "counter")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("attempts per writer: %v", attempts)
	if got != writers*perWriter {
		t.Fatalf("counter = %d after %d increments: updates were lost", got, writers*perWriter)
	}
}

// testAtomicOverwrite checks readers see a whole old or new object while a
// writer replaces it, never a mix.
func testAtomicOverwrite(t *testing.T, b objstore.Bucket) {
	const size, writes, readers, maxReads = 64 << 10, 20, 2, 2000
	ctx := t.Context()
	versions := [2][]byte{bytes.Repeat([]byte{'a'}, size), bytes.Repeat([]byte{'b'}, size)}
	mustPut(t, b, "atomic", versions[0], objstore.PutOptions{})

	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers+1)
	wg.Go(func() {
		defer close(done)
		for i := range writes {
			if _, err := b.Put(ctx, "atomic", versions[(i+1)%2], objstore.PutOptions{}); err != nil {
				errs <- err
				return
			}
		}
	})
	for range readers {
		wg.Go(func() {
			for range maxReads {
				select {
				case <-done:
					return
				default:
				}
				data, _, err := b.Get(ctx, "atomic")
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(data, versions[0]) && !bytes.Equal(data, versions[1]) {
					errs <- errors.New("a reader saw a torn object")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
