// Package miniotest runs a real MinIO server for tests: a separate process
// (never linked in) listening on a free 127.0.0.1 port, with its data in a
// t.TempDir(), random root credentials, and its web console off. Start
// waits until the server is ready and registers a cleanup that stops it by
// its PID (SIGTERM, then SIGKILL).
//
// The minio binary is looked up on PATH, then in $(go env GOPATH)/bin. A
// test that needs it and cannot find it fails with the install command
// (InstallCommand); it is never skipped, so a missing server cannot pass
// for a green run. scripts/test.sh installs it.
//
// One Server is meant to be shared by the subtests of a test: buckets are
// cheap (NewBucket), server starts are not (about half a second).
//
// The server and its clients talk over loopback only. A Server's methods
// are safe for concurrent use.
package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// InstallCommand installs the MinIO server this package runs: the version
// docs/design.md §4 names. It takes a few minutes on a machine with an empty
// module cache.
const InstallCommand = "go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// Region is the region the server answers for (MinIO's default).
const Region = "us-east-1"

// KMSKeyID names the server's one KMS key, for SSE-KMS
// (s3://...?sse=aws:kms&kms-key-id=KMSKeyID). SSE-S3 uses it too.
const KMSKeyID = "strata-test-key"

const (
	// startTimeout bounds the wait for a started server to become ready.
	startTimeout = 60 * time.Second
	// startAttempts bounds retries when the free port chosen was taken by
	// someone else between choosing it and the server binding it.
	startAttempts = 3
	// stopTimeout is how long the server gets to exit after SIGTERM
	// before it is killed.
	stopTimeout = 10 * time.Second
	// requestTimeout bounds each request the harness makes itself.
	requestTimeout = 30 * time.Second
	// logTailBytes is how much of the server's log a failure shows.
	logTailBytes = 4 << 10
)

// Server is a running MinIO server.
type Server struct {
	addr      string // 127.0.0.1:port
	accessKey string
	secretKey string
	kmsKey    string // base64 of 32 random bytes
	dir       string // holds data/, certs/ and the log
	client    *minio.Client
	proc      *process
}

var bucketSeq atomic.Uint64

// Start starts a MinIO server for the test and stops it when the test ends.
// It fails the test (never skips it) if the minio binary is missing or the
// server does not become ready within a bounded time.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	// TempDir before Cleanup: cleanups run last-registered first, so the
	// server is stopped before its directory is removed.
	dir := t.TempDir()
	s := &Server{
		dir:       dir,
		accessKey: "strata-" + randomHex(t, 6),
		secretKey: randomHex(t, 20),
		kmsKey:    randomBase64(t, 32),
	}
	for _, sub := range []string{"data", "certs"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatalf("miniotest: %v", err)
		}
	}
	for attempt := 1; ; attempt++ {
		err := s.start(t, bin, attempt)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.Fatalf("miniotest: %v", err)
		}
		t.Logf("miniotest: %v; trying other ports", err)
	}
	s.client, err = minio.New(s.addr, &minio.Options{
		Creds:  credentials.NewStaticV4(s.accessKey, s.secretKey, ""),
		Secure: false,
		Region: Region,
	})
	if err != nil {
		t.Fatalf("miniotest: client: %v", err)
	}
	return s
}

// Stop stops the server now rather than at the end of the test, as a
// crash or an outage would. Requests to it then fail to connect.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.proc.stop(); err != nil {
		t.Fatalf("miniotest: stop minio: %v", err)
	}
}

// Addr returns the server's host:port on loopback.
func (s *Server) Addr() string { return s.addr }

// Endpoint returns the server's URL, http://127.0.0.1:port.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Credentials returns the server's root access key and secret key.
func (s *Server) Credentials() (accessKey, secretKey string) { return s.accessKey, s.secretKey }

// Client returns a minio-go client of the server with root credentials:
// an S3 client independent of the one Strata uses, for checking what a
// bucket really holds.
func (s *Server) Client() *minio.Client { return s.client }

// CreateBucket creates the bucket name.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := s.client.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("miniotest: create bucket %q: %v", name, err)
	}
}

// NewBucket creates a bucket with a new name and returns the name.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test-%d-%s", bucketSeq.Add(1), randomHex(t, 4))
	s.CreateBucket(t, name)
	return name
}

// StoreURL returns the --store setting for the bucket and key prefix (may
// be empty) on this server. It carries no credentials: an agent reads them
// from the environment (Env).
func (s *Server) StoreURL(bucket, prefix string) string {
	path := bucket
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		path += "/" + prefix
	}
	q := url.Values{}
	q.Set("endpoint", s.Endpoint())
	q.Set("region", Region)
	q.Set("path-style", "true")
	return "s3://" + path + "?" + q.Encode()
}

// Env returns the environment variables a process (an agent subprocess, or
// this one through t.Setenv) needs to reach the server through the AWS
// SDK's default credential chain: the root keys and region, and the
// neutralising of anything else in the chain, so a developer's own AWS
// profile, session token or instance metadata service is never consulted.
// Append it after os.Environ(): for a duplicated variable, exec uses the
// last value.
func (s *Server) Env() []string {
	absent := filepath.Join(s.dir, "no-aws-config") // never created
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.accessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.secretKey,
		"AWS_SESSION_TOKEN=",
		"AWS_REGION=" + Region,
		"AWS_PROFILE=",
		"AWS_CONFIG_FILE=" + absent,
		"AWS_SHARED_CREDENTIALS_FILE=" + absent,
		"AWS_WEB_IDENTITY_TOKEN_FILE=",
		"AWS_ROLE_ARN=",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI=",
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

func randomHex(t testing.TB, n int) string { return hex.EncodeToString(randomBytes(t, n)) }

func randomBase64(t testing.TB, n int) string {
	return base64.StdEncoding.EncodeToString(randomBytes(t, n))
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("miniotest: random: %v", err)
	}
	return b
}
