package objstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/tiering/objstore"
)

func TestOpen(t *testing.T) {
	ctx := t.Context()
	abs := t.TempDir()
	b, err := objstore.Open(ctx, "file://"+abs)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if fb, ok := b.(*objstore.FSBucket); !ok || fb.Root() != abs {
		t.Fatalf("file:// of an absolute path gave %T rooted elsewhere", b)
	}

	// file://./relative/path is relative to the working directory.
	t.Chdir(t.TempDir())
	rel, err := objstore.Open(ctx, "file://./data/store")
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	wd, _ := os.Getwd()
	if got := rel.(*objstore.FSBucket).Root(); got != filepath.Join(wd, "data", "store") {
		t.Fatalf("relative root = %s", got)
	}

	m, err := objstore.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*objstore.MemBucket); !ok {
		t.Fatalf("mem:// gave %T", m)
	}

	// None of these reaches a network: s3:// URLs that fail to parse are
	// refused before any request.
	for _, url := range []string{"s3://", "s3://bucket?path-style=maybe", "/plain/path", "gs://x", "file://", "mem://x", "file:///a?b=c", "file://data/store"} {
		_, err := objstore.Open(ctx, url)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", url)
		}
		if !strings.Contains(err.Error(), url) {
			t.Fatalf("Open(%q): error does not name the URL: %v", url, err)
		}
	}
	_, err = objstore.Open(ctx, "gs://bucket/prefix")
	if !errors.Is(err, objstore.ErrUnsupportedScheme) || !strings.Contains(err.Error(), "file://, s3:// and mem://") {
		t.Fatalf("gs:// error should say which schemes work: %v", err)
	}
}
