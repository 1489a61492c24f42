package miniotest

import (
	"bytes"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
)

func TestServer(t *testing.T) {
	s := Start(t)
	if host, _, err := net.SplitHostPort(s.Addr()); err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr = %q, want a 127.0.0.1 address", s.Addr())
	}
	bucket := s.NewBucket(t)
	other := s.NewBucket(t)
	if bucket == other {
		t.Fatalf("NewBucket gave %q twice", bucket)
	}

	ctx := t.Context()
	c := s.Client()
	if ok, err := c.BucketExists(ctx, bucket); err != nil || !ok {
		t.Fatalf("BucketExists(%q) = %v, %v", bucket, ok, err)
	}
	payload := []byte("hello, minio")
	if _, err := c.PutObject(ctx, bucket, "a/b", bytes.NewReader(payload), int64(len(payload)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(ctx, bucket, "a/b", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("GetObject = %q, %v", got, err)
	}

	// The store URL names the bucket, the prefix and the endpoint, and no
	// secret.
	store := s.StoreURL(bucket, "/cluster/one/")
	u, err := url.Parse(store)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "s3" || u.Host != bucket || u.Path != "/cluster/one" ||
		u.Query().Get("endpoint") != s.Endpoint() || u.Query().Get("path-style") != "true" || u.Query().Get("region") != Region {
		t.Fatalf("StoreURL = %q", store)
	}
	access, secret := s.Credentials()
	if strings.Contains(store, secret) || strings.Contains(store, access) {
		t.Fatalf("StoreURL %q carries credentials", store)
	}
	if got := s.StoreURL(bucket, ""); strings.Contains(got, bucket+"/") {
		t.Fatalf("StoreURL without a prefix = %q", got)
	}
	env := s.Env()
	for _, want := range []string{"AWS_ACCESS_KEY_ID=" + access, "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_REGION=" + Region, "AWS_EC2_METADATA_DISABLED=true"} {
		if !slices.Contains(env, want) {
			t.Errorf("Env() lacks %q: %q", want, env)
		}
	}

	// Stop ends the process; the port stops answering.
	s.Stop(t)
	if conn, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Stop", s.Addr())
	}
	s.Stop(t) // a second stop (and the cleanup's) is a no-op
}

// Without a minio binary, the error says how to install it.
func TestBinaryMissing(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is not on PATH: %v", err)
	}
	// A PATH holding only the go tool, and a GOPATH with no minio in it.
	bin := t.TempDir()
	if err := os.Symlink(goTool, filepath.Join(bin, "go")); err != nil {
		t.Fatal(err)
	}
	gopath := t.TempDir()
	t.Setenv("PATH", bin)
	t.Setenv("GOPATH", gopath)
	_, err = findBinary()
	if err == nil {
		t.Fatal("findBinary found a minio that should not exist")
	}
	for _, want := range []string{InstallCommand, filepath.Join(gopath, "bin", "minio")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	// With a binary in GOPATH/bin, it is found there.
	if err := os.Mkdir(filepath.Join(gopath, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(gopath, "bin", "minio")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := findBinary(); err != nil || got != fake {
		t.Fatalf("findBinary = %q, %v, want %q", got, err, fake)
	}
}
