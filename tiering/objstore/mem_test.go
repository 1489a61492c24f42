package objstore_test

import (
	"errors"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/objstore/objstoretest"
)

func newMem(t *testing.T) objstore.Bucket {
	b := objstore.NewMem()
	t.Cleanup(func() { b.Close() })
	return b
}

func TestMemAcceptance(t *testing.T) {
	objstoretest.Run(t, newMem)
}

func TestMemETagChangesOnIdenticalContent(t *testing.T) {
	b := newMem(t)
	e1, err := b.Put(t.Context(), "k", []byte("same"), objstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := b.Put(t.Context(), "k", []byte("same"), objstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e1 == e2 {
		t.Fatalf("two Puts gave ETag %q", e1)
	}
}

func TestMemClosed(t *testing.T) {
	b := objstore.NewMem()
	b.Close()
	if _, err := b.Put(t.Context(), "k", nil, objstore.PutOptions{}); !errors.Is(err, objstore.ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	if err := b.List(t.Context(), "", nil); !errors.Is(err, objstore.ErrClosed) {
		t.Fatalf("List after Close: %v", err)
	}
}

// Offset == size is an empty body on every local backend (see clampRange).
func TestRangeAtEnd(t *testing.T) {
	for name, b := range map[string]objstore.Bucket{"mem": newMem(t), "fs": newFS(t)} {
		if _, err := b.Put(t.Context(), "k", []byte("abc"), objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		rc, err := b.GetRange(t.Context(), "k", 3, -1)
		if err != nil {
			t.Fatalf("%s: GetRange at the end: %v", name, err)
		}
		buf := make([]byte, 1)
		if n, _ := rc.Read(buf); n != 0 {
			t.Fatalf("%s: read %d bytes at the end", name, n)
		}
		rc.Close()
		if _, err := b.GetRange(t.Context(), "k", -1, 1); !errors.Is(err, objstore.ErrInvalidRange) {
			t.Fatalf("%s: negative offset: %v", name, err)
		}
	}
}
