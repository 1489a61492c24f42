package objstore_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/testwait"
	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/objstore/objstoretest"
)

// These tests run against a real MinIO server (internal/miniotest). They
// fail, never skip, when the minio binary is missing.

// s3Config returns a configuration for bucket on srv (or on endpoint, a
// proxy in front of it) with the server's credentials given in code, and
// backoffs short enough for tests.
func s3Config(srv *miniotest.Server, bucket, endpoint string) objstore.S3Config {
	access, secret := srv.Credentials()
	cfg := objstore.DefaultS3Config(bucket)
	cfg.Endpoint = endpoint
	cfg.Region = miniotest.Region
	cfg.PathStyle = true
	cfg.Credentials = credentials.NewStaticCredentialsProvider(access, secret, "")
	cfg.MaxBackoff = 50 * time.Millisecond
	return cfg
}

// newS3 opens a bucket with cfg and closes it when the test ends.
func newS3(t *testing.T, cfg objstore.S3Config) *objstore.S3Bucket {
	t.Helper()
	b, err := objstore.NewS3(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// setEnv sets the variables of a miniotest.Server's Env for the test.
func setEnv(t *testing.T, env []string) {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

func TestS3Acceptance(t *testing.T) {
	srv := miniotest.Start(t)
	// Default part size: every suite object is one PutObject.
	t.Run("OnePart", func(t *testing.T) {
		objstoretest.Run(t, func(t *testing.T) objstore.Bucket {
			return newS3(t, s3Config(srv, srv.NewBucket(t), srv.Endpoint()))
		})
	})
	// The smallest part size S3 allows: the large objects are multipart
	// uploads, their conditions checked on CompleteMultipartUpload.
	t.Run("SmallParts", func(t *testing.T) {
		objstoretest.Run(t, func(t *testing.T) objstore.Bucket {
			cfg := s3Config(srv, srv.NewBucket(t), srv.Endpoint())
			cfg.PartSize = objstore.S3MinPartSize
			cfg.UploadConcurrency = 2
			return newS3(t, cfg)
		})
	})
	// As an agent opens it: a --store URL with a key prefix, credentials
	// from the environment through the SDK's default chain.
	t.Run("StoreURL", func(t *testing.T) {
		setEnv(t, srv.Env())
		objstoretest.Run(t, func(t *testing.T) objstore.Bucket {
			b, err := objstore.Open(t.Context(), srv.StoreURL(srv.NewBucket(t), "cluster/one"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return b
		})
	})
}

// The prefix of a store URL is where the objects really are.
func TestS3StoreURLPrefix(t *testing.T) {
	srv := miniotest.Start(t)
	setEnv(t, srv.Env())
	bucket := srv.NewBucket(t)
	b, err := objstore.Open(t.Context(), srv.StoreURL(bucket, "/prod/c1/"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Put(t.Context(), "cluster.json", []byte("{}"), objstore.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client().StatObject(t.Context(), bucket, "prod/c1/cluster.json", minio.StatObjectOptions{}); err != nil {
		t.Fatalf("the object is not under the prefix: %v", err)
	}
}

func TestS3OpenErrors(t *testing.T) {
	srv := miniotest.Start(t)
	setEnv(t, srv.Env())
	bucket := srv.NewBucket(t)
	ctx := t.Context()

	wantErr := func(url string, words ...string) {
		t.Helper()
		b, err := objstore.Open(ctx, url)
		if err == nil {
			b.Close()
			t.Fatalf("Open(%q) succeeded", url)
		}
		for _, w := range words {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Open(%q): error %q does not mention %q", url, err, w)
			}
		}
	}
	wantErr(srv.StoreURL("no-such-bucket", "p"), `"no-such-bucket"`, srv.Endpoint(), "does not exist")

	// No credentials anywhere in the chain (Env turned off the config
	// files and instance metadata, so this asks no network).
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	wantErr(srv.StoreURL(bucket, ""), `"`+bucket+`"`, srv.Endpoint(), "no usable credentials", "AWS_ACCESS_KEY_ID")

	setEnv(t, srv.Env())
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	wantErr(srv.StoreURL(bucket, ""), `"`+bucket+`"`, srv.Endpoint(), "access denied", "AWS_ACCESS_KEY_ID")
	t.Setenv("AWS_ACCESS_KEY_ID", "nobody")
	wantErr(srv.StoreURL(bucket, ""), `"`+bucket+`"`, srv.Endpoint(), "access denied")

	// A closed port on loopback: one attempt, so the test does not wait
	// for backoffs.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	wantErr("s3://"+bucket+"?max-attempts=1&endpoint="+closed, `"`+bucket+`"`, closed, "cannot reach")
}

// Objects larger than the part size are multipart uploads: the ETag has
// S3's "-<parts>" form, and no upload is left behind, whether the upload
// succeeded, lost its condition or failed part way.
func TestS3Multipart(t *testing.T) {
	srv := miniotest.Start(t)
	bucket := srv.NewBucket(t)
	cfg := s3Config(srv, bucket, srv.Endpoint())
	cfg.PartSize = objstore.S3MinPartSize
	cfg.UploadConcurrency = 3
	b := newS3(t, cfg)
	ctx := t.Context()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	data := make([]byte, 3*objstore.S3MinPartSize+12345) // four parts
	for i := range data {
		data[i] = byte(r.Uint32())
	}

	etag, err := b.PutReader(ctx, "seg/0.log", bytes.NewReader(data), int64(len(data)), objstore.PutOptions{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(etag, "-4") {
		t.Fatalf("ETag %q is not a four-part multipart ETag", etag)
	}
	info, err := srv.Client().StatObject(ctx, bucket, "seg/0.log", minio.StatObjectOptions{})
	if err != nil || info.Size != int64(len(data)) || strings.Trim(info.ETag, `"`) != etag {
		t.Fatalf("minio-go sees %+v, %v; want size %d ETag %q", info, err, len(data), etag)
	}
	got, _, err := b.Get(ctx, "seg/0.log")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after a multipart upload: %d bytes, %v; content equal: %v", len(got), err, bytes.Equal(got, data))
	}

	// The condition is checked when the upload completes.
	if _, err := b.PutReader(ctx, "seg/0.log", bytes.NewReader(data), int64(len(data)), objstore.PutOptions{IfAbsent: true}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("multipart create over an existing key: %v, want precondition failed", err)
	}

	// A source that fails in the third part fails the upload with its
	// error, and the upload is aborted.
	readErr := errors.New("segment file vanished")
	bad := &failAfter{r: bytes.NewReader(data), at: 2*objstore.S3MinPartSize + 100, err: readErr}
	if _, err := b.PutReader(ctx, "seg/1.log", bad, int64(len(data)), objstore.PutOptions{}); !errors.Is(err, readErr) {
		t.Fatalf("PutReader from a failing source: %v, want the source's error", err)
	}
	if _, _, err := b.Get(ctx, "seg/1.log"); !objstore.IsNotFound(err) {
		t.Fatalf("a failed upload left an object: %v", err)
	}
	for u := range srv.Client().ListIncompleteUploads(ctx, bucket, "", true) {
		t.Errorf("upload left behind: %+v", u)
	}
}

// failAfter is a ReaderAt that fails every read reaching byte at.
type failAfter struct {
	r   io.ReaderAt
	at  int64
	err error
}

func (f *failAfter) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.at {
		return 0, f.err
	}
	return f.r.ReadAt(p, off)
}

// The SDK's standard retryer treats SlowDown as throttling (a retry with
// a longer backoff) and 500/503 as retryable. Should an SDK update drop
// that, this says so before an overloaded S3 does.
func TestS3SlowDownIsRetryableThrottling(t *testing.T) {
	slowDown := &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate."}
	if !retry.NewStandard().IsErrorRetryable(slowDown) {
		t.Error("SlowDown is not retryable")
	}
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(slowDown) != aws.TrueTernary {
		t.Error("SlowDown is not a throttling error")
	}
	for _, status := range []int{500, 503} {
		if _, ok := retry.DefaultRetryableHTTPStatusCodes[status]; !ok {
			t.Errorf("status %d is not retryable", status)
		}
	}
}

// 503 SlowDown and 500 answers are retried, with backoff, up to
// MaxAttempts; a part of a multipart upload is retried on its own, its
// bytes read again from the source.
func TestS3RetriesServerErrors(t *testing.T) {
	srv := miniotest.Start(t)
	proxy := newS3Proxy(t, srv.Endpoint())
	cfg := s3Config(srv, srv.NewBucket(t), proxy.URL())
	cfg.PartSize = objstore.S3MinPartSize
	cfg.MaxAttempts = 4
	b := newS3(t, cfg)
	ctx := t.Context()

	proxy.fail(2, http.StatusServiceUnavailable, "SlowDown", isPut)
	proxy.fail(1, http.StatusInternalServerError, "InternalError", isPut)
	if _, err := b.Put(ctx, "retried", []byte("made it"), objstore.PutOptions{IfAbsent: true}); err != nil {
		t.Fatalf("Put through three server errors (4 attempts allowed): %v", err)
	}
	puts := proxy.seen(func(r seenRequest) bool { return r.method == http.MethodPut })
	if len(puts) != 4 || !puts[0].failed || !puts[1].failed || !puts[2].failed || puts[3].failed {
		t.Fatalf("PUT attempts = %+v, want three failed and one passed", puts)
	}
	if data, _, err := b.Get(ctx, "retried"); err != nil || string(data) != "made it" {
		t.Fatalf("Get = %q, %v", data, err)
	}

	// The attempts are bounded: four 503s fail the Put, with SlowDown in
	// the error.
	proxy.fail(4, http.StatusServiceUnavailable, "SlowDown", isPut)
	_, err := b.Put(ctx, "gave-up", []byte("x"), objstore.PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "SlowDown") || objstore.IsPreconditionFailed(err) || objstore.IsNotFound(err) {
		t.Fatalf("Put through four SlowDowns: %v, want a SlowDown error", err)
	}
	if _, _, err := b.Get(ctx, "gave-up"); !objstore.IsNotFound(err) {
		t.Fatalf("Get after the failed Put: %v", err)
	}

	// Part 2 of a three-part upload meets a SlowDown and is sent again.
	data := bytes.Repeat([]byte("0123456789abcdef"), (2*objstore.S3MinPartSize+1000)/16)
	proxy.fail(1, http.StatusServiceUnavailable, "SlowDown", isPart("2"))
	if _, err := b.PutReader(ctx, "multi", bytes.NewReader(data), int64(len(data)), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	part2 := proxy.seen(func(r seenRequest) bool { return r.method == http.MethodPut && r.query.Get("partNumber") == "2" })
	if len(part2) != 2 || !part2[0].failed || part2[1].failed {
		t.Fatalf("part 2 attempts = %+v, want one failed, one passed", part2)
	}
	if got, _, err := b.Get(ctx, "multi"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get after a retried part: %v, content equal: %v", err, bytes.Equal(got, data))
	}
}

// A conditional write that gets no answer at all (every attempt's
// connection dropped) is decided by reading the key: if the condition
// cannot hold, it is a lost condition; if it could, the connection error
// stands and nothing was written.
func TestS3ConditionalWriteWithoutAnswer(t *testing.T) {
	srv := miniotest.Start(t)
	proxy := newS3Proxy(t, srv.Endpoint())
	cfg := s3Config(srv, srv.NewBucket(t), proxy.URL())
	cfg.MaxAttempts = 2
	b := newS3(t, cfg)
	ctx := t.Context()
	etag, err := b.Put(ctx, "exists", []byte("v1"), objstore.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}

	proxy.fail(2, 0, "", isPut)
	if _, err := b.Put(ctx, "exists", []byte("v2"), objstore.PutOptions{IfAbsent: true}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("IfAbsent on an existing key, no answer: %v, want precondition failed", err)
	}
	proxy.fail(2, 0, "", isPut)
	if _, err := b.Put(ctx, "exists", []byte("v2"), objstore.PutOptions{IfMatch: etag + "0"}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("IfMatch with a stale ETag, no answer: %v, want precondition failed", err)
	}
	proxy.fail(2, 0, "", isPut)
	if _, err := b.Put(ctx, "absent", []byte("v1"), objstore.PutOptions{IfAbsent: true}); err == nil || objstore.IsPreconditionFailed(err) {
		t.Fatalf("IfAbsent on a missing key, no answer: %v, want the connection error", err)
	}
	proxy.fail(2, 0, "", isPut)
	if _, err := b.Put(ctx, "exists", []byte("v2"), objstore.PutOptions{IfMatch: etag}); err == nil || objstore.IsPreconditionFailed(err) {
		t.Fatalf("IfMatch with the current ETag, no answer: %v, want the connection error", err)
	}
	if got, attrs, err := b.Get(ctx, "exists"); err != nil || string(got) != "v1" || attrs.ETag != etag {
		t.Fatalf("after unanswered writes: %q %+v %v, want v1 unchanged", got, attrs, err)
	}
	if _, _, err := b.Get(ctx, "absent"); !objstore.IsNotFound(err) {
		t.Fatalf("an unanswered create wrote: %v", err)
	}
	if n := len(proxy.seen(func(r seenRequest) bool { return r.failed })); n != 8 {
		t.Fatalf("%d requests dropped, want 8 (4 writes, 2 attempts each)", n)
	}
}

// Uploads carry no request checksum (no x-amz-checksum-* or trailer, no
// aws-chunked encoding), and MinIO stores them; the conditions go out as
// If-None-Match: * and a quoted If-Match.
func TestS3UploadsWithoutChecksums(t *testing.T) {
	srv := miniotest.Start(t)
	proxy := newS3Proxy(t, srv.Endpoint())
	cfg := s3Config(srv, srv.NewBucket(t), proxy.URL())
	cfg.PartSize = objstore.S3MinPartSize
	b := newS3(t, cfg)
	ctx := t.Context()

	e1, err := b.Put(ctx, "small", []byte("no checksum"), objstore.PutOptions{IfAbsent: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "small", []byte("still none"), objstore.PutOptions{IfMatch: e1}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{7}, objstore.S3MinPartSize+1)
	if _, err := b.PutReader(ctx, "big", bytes.NewReader(big), int64(len(big)), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	puts := proxy.seen(func(r seenRequest) bool { return r.method == http.MethodPut })
	if len(puts) != 4 { // two PutObjects, two parts
		t.Fatalf("saw %d PUTs, want 4", len(puts))
	}
	for _, r := range puts {
		for name := range r.header {
			lower := strings.ToLower(name)
			if strings.HasPrefix(lower, "x-amz-checksum-") || lower == "x-amz-sdk-checksum-algorithm" || lower == "x-amz-trailer" || lower == "content-md5" {
				t.Errorf("PUT %v sent %s: %q", r.query, name, r.header.Get(name))
			}
		}
		if enc := r.header.Get("Content-Encoding"); strings.Contains(enc, "aws-chunked") {
			t.Errorf("PUT %v is aws-chunked", r.query)
		}
		if sha := r.header.Get("X-Amz-Content-Sha256"); strings.HasPrefix(sha, "STREAMING-") {
			t.Errorf("PUT %v is a streaming upload: %s", r.query, sha)
		}
	}
	if got := puts[0].header.Get("If-None-Match"); got != "*" {
		t.Errorf("IfAbsent sent If-None-Match %q", got)
	}
	if got := puts[1].header.Get("If-Match"); got != `"`+e1+`"` {
		t.Errorf("IfMatch sent If-Match %q, want %q", got, `"`+e1+`"`)
	}
	if got, _, err := b.Get(ctx, "small"); err != nil || string(got) != "still none" {
		t.Fatalf("Get = %q, %v", got, err)
	}
}

// S3 answers a range at the end of an object with 416; the Bucket rules
// make it an empty body. Zero-length ranges, which S3 cannot express, work
// too.
func TestS3RangeEdges(t *testing.T) {
	srv := miniotest.Start(t)
	b := newS3(t, s3Config(srv, srv.NewBucket(t), srv.Endpoint()))
	ctx := t.Context()
	if _, err := b.Put(ctx, "k", []byte("abc"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "empty", nil, objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	read := func(key string, offset, length int64) (string, error) {
		rc, err := b.GetRange(ctx, key, offset, length)
		if err != nil {
			return "", err
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		return string(data), err
	}
	for _, tc := range []struct {
		key            string
		offset, length int64
		want           string
	}{
		{"k", 3, -1, ""},
		{"k", 3, 10, ""},
		{"k", 3, 0, ""},
		{"k", 1, 0, ""},
		{"k", 0, 0, ""},
		{"k", 1, 1<<63 - 1, "bc"},
		{"empty", 0, -1, ""},
		{"empty", 0, 5, ""},
		{"empty", 0, 0, ""},
	} {
		got, err := read(tc.key, tc.offset, tc.length)
		if err != nil || got != tc.want {
			t.Errorf("GetRange(%q, %d, %d) = %q, %v, want %q", tc.key, tc.offset, tc.length, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		key            string
		offset, length int64
	}{{"k", 4, -1}, {"k", 4, 0}, {"k", -1, 1}, {"empty", 1, -1}} {
		if _, err := read(tc.key, tc.offset, tc.length); !errors.Is(err, objstore.ErrInvalidRange) {
			t.Errorf("GetRange(%q, %d, %d): %v, want ErrInvalidRange", tc.key, tc.offset, tc.length, err)
		}
	}
	if _, err := read("missing", 0, 0); !objstore.IsNotFound(err) {
		t.Errorf("zero-length GetRange of a missing key: %v", err)
	}
	if _, err := read("missing", 5, 1); !objstore.IsNotFound(err) {
		t.Errorf("GetRange of a missing key: %v", err)
	}
}

// List pages through ListObjectsV2 in order, and skips objects whose keys
// Strata could not have written.
func TestS3ListPagesAndSkipsForeignKeys(t *testing.T) {
	srv := miniotest.Start(t)
	bucket := srv.NewBucket(t)
	cfg := s3Config(srv, bucket, srv.Endpoint())
	cfg.ListPageSize = 2
	b := newS3(t, cfg)
	ctx := t.Context()
	var want []string
	for i := range 7 {
		key := "p/k" + strconv.Itoa(i)
		want = append(want, key)
		if _, err := b.Put(ctx, key, []byte{byte(i)}, objstore.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A folder marker, as consoles make them.
	if _, err := srv.Client().PutObject(ctx, bucket, "p/folder/", bytes.NewReader(nil), 0, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := b.List(ctx, "p/", func(key string, attrs objstore.Attributes) error {
		got = append(got, key)
		if attrs.Size != 1 || attrs.ETag == "" {
			t.Errorf("List attrs of %q = %+v", key, attrs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}

// A bucket deleted under an open S3Bucket is an error, never "not found":
// metadata code must not read it as "nothing there yet, create it".
func TestS3MissingBucketIsNotNotFound(t *testing.T) {
	srv := miniotest.Start(t)
	bucket := srv.NewBucket(t)
	b := newS3(t, s3Config(srv, bucket, srv.Endpoint()))
	ctx := t.Context()
	if err := srv.Client().RemoveBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	// For a moment after RemoveBucket returns, a loaded MinIO can still
	// answer GetObject with NoSuchKey rather than NoSuchBucket; wait
	// (bounded) for the bucket to be gone.
	var err error
	polls := 0
	testwait.Poll(10*time.Second, func() bool {
		polls++
		_, _, err = b.Get(ctx, "cluster.json")
		return !objstore.IsNotFound(err)
	})
	if polls > 1 {
		t.Logf("MinIO answered NoSuchKey %d times after the bucket was removed", polls-1)
	}
	if err == nil || objstore.IsNotFound(err) || !strings.Contains(err.Error(), bucket) {
		t.Fatalf("Get from a deleted bucket: %v, want an error naming the bucket that is not ErrNotFound", err)
	}
	// The same lag can answer a conditional PUT with NoSuchKey (a lost
	// condition, rightly); it must end with NoSuchBucket.
	testwait.Poll(10*time.Second, func() bool {
		_, err = b.Put(ctx, "cluster.json", []byte("{}"), objstore.PutOptions{IfMatch: "x"})
		return !objstore.IsPreconditionFailed(err)
	})
	if err == nil || objstore.IsPreconditionFailed(err) {
		t.Fatalf("IfMatch Put to a deleted bucket: %v, want an error that is not a lost condition", err)
	}
}

func TestS3Closed(t *testing.T) {
	srv := miniotest.Start(t)
	b := newS3(t, s3Config(srv, srv.NewBucket(t), srv.Endpoint()))
	b.Close()
	if _, _, err := b.Get(t.Context(), "k"); !errors.Is(err, objstore.ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := b.List(t.Context(), "", nil); !errors.Is(err, objstore.ErrClosed) {
		t.Fatalf("List after Close: %v", err)
	}
}

// TestS3ServerSideEncryption: with sse= in the store URL every object is
// written encrypted as asked, in one PutObject and in parts, and reads
// back; MinIO reports the encryption and the KMS key of each object.
func TestS3ServerSideEncryption(t *testing.T) {
	srv := miniotest.Start(t)
	setEnv(t, srv.Env())
	data := bytes.Repeat([]byte("archived for years "), objstore.S3MinPartSize/10) // two parts at the smallest part size
	for _, tc := range []struct {
		query, wantSSE, wantKey string
	}{
		{"sse=AES256", "AES256", ""},
		{"sse=aws:kms&kms-key-id=" + miniotest.KMSKeyID, "aws:kms", miniotest.KMSKeyID},
	} {
		t.Run(tc.wantSSE, func(t *testing.T) {
			bucket := srv.NewBucket(t)
			url := srv.StoreURL(bucket, "enc") + "&part-size=" + strconv.Itoa(objstore.S3MinPartSize) + "&" + tc.query
			b, err := objstore.Open(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for _, key := range []string{"small", "large"} {
				body := []byte("manifest")
				if key == "large" {
					body = data
				}
				if _, err := b.Put(t.Context(), key, body, objstore.PutOptions{IfAbsent: true}); err != nil {
					t.Fatalf("put %s: %v", key, err)
				}
				got, _, err := b.Get(t.Context(), key)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("get %s: %d bytes, %v", key, len(got), err)
				}
				info, err := srv.Client().StatObject(t.Context(), bucket, "enc/"+key, minio.StatObjectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				sse := info.Metadata.Get("X-Amz-Server-Side-Encryption")
				keyID := info.Metadata.Get("X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id")
				if sse != tc.wantSSE || (tc.wantKey != "" && !strings.HasSuffix(keyID, tc.wantKey)) {
					t.Fatalf("%s: stored with encryption %q, key %q; want %q, %q", key, sse, keyID, tc.wantSSE, tc.wantKey)
				}
			}
		})
	}
	for query, want := range map[string]string{
		"sse=DES":                     "want AES256",
		"kms-key-id=k":                "a KMS key needs sse=aws:kms",
		"sse=AES256&sse-bucket-key=1": "a bucket key needs sse=aws:kms",
	} {
		_, err := objstore.Open(t.Context(), srv.StoreURL(srv.NewBucket(t), "enc")+"&"+query)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", query, err, want)
		}
	}
}
