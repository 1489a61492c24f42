package objstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Bucket is a Bucket in an S3 bucket (AWS S3, MinIO, Ceph RGW, ...),
// through the AWS SDK for Go v2.
//
// Conditions are S3's conditional writes: IfAbsent sends If-None-Match: *
// and IfMatch sends If-Match: "<etag>", on PutObject or, for an object
// uploaded in parts, on CompleteMultipartUpload; the store decides
// atomically. A lost condition (412, or 409 ConditionalRequestConflict when
// another conditional write to the key is in flight) is
// ErrPreconditionFailed.
//
// Objects up to PartSize bytes are one PutObject; larger ones a multipart
// upload whose parts go UploadConcurrency at a time and which is aborted
// on any failure (aborts can fail too: a lifecycle rule that removes
// incomplete uploads after a day is a good idea on any bucket).
//
// Retries: every request is retried by the SDK's standard retryer
// (MaxAttempts, exponential backoff with full jitter, at most MaxBackoff
// apart; throttling answers such as 503 SlowDown start from a 1 s base,
// others from 50 ms; a client-wide retry budget stops retry storms). A
// retried conditional write can report a write that did happen as
// ErrPreconditionFailed (the first attempt won, its answer was lost, and
// the retry meets the new object): callers re-read and decide again, which
// the CAS protocol (docs/design.md §5) does anyway. For the same reason, a
// conditional write whose every attempt ended without an answer (a reset
// connection) is decided by reading the key: if the condition does not
// hold now, the error is ErrPreconditionFailed.
//
// Checksums: the SDK adds request checksums and validates response
// checksums only where the S3 API requires them, so uploads are plain
// signed bodies that MinIO and Ceph accept; integrity in transit rests on
// the SigV4 payload hash (http) or TLS (https).
//
// ETags are S3's, without the quotes. S3 derives them from the content, so
// writing identical bytes keeps the ETag (see the package doc).
//
// A key that is not a valid key (ValidateKey) is refused before any
// request. List skips objects whose keys are not valid keys (folder
// markers such as "dir/" made by consoles): they are not Strata's.
type S3Bucket struct {
	cfg       S3Config
	client    *s3.Client
	transport *http.Transport
	closed    atomic.Bool
}

var _ Bucket = (*S3Bucket)(nil)

// abortTimeout bounds the AbortMultipartUpload sent after a failed upload,
// which runs even when the upload failed because its context ended.
const abortTimeout = 30 * time.Second

// s3ExpectContinueTimeout is how long a request with a large body (the SDK
// sends Expect: 100-continue above 2 MB) waits for the server's go-ahead
// before sending the body anyway. S3 and MinIO answer at once, with 100
// Continue or with a refusal such as 412; the SDK's default of 1 s is
// shorter than a loaded server can take to refuse, and a refusal that
// arrives while the body is being sent is often lost to a reset
// connection.
const s3ExpectContinueTimeout = 5 * time.Second

// NewS3 connects to the bucket cfg names and checks that it exists and the
// credentials may use it (HeadBucket). The error for a missing bucket, bad
// credentials or an unreachable endpoint names the bucket and the endpoint.
func NewS3(ctx context.Context, cfg S3Config) (*S3Bucket, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.MaxAttempts
				o.MaxBackoff = cfg.MaxBackoff
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: load AWS configuration: %w", cfg.where(), err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	// The SDK's transport (its timeouts and pool sizes, proxies from the
	// environment, and a CA bundle from AWS_CA_BUNDLE, which the loader
	// installs only in its own client type), owned here so Close can drop
	// its idle connections. Redirects are not followed: S3 answers a wrong
	// region with one, and the error says so better than a re-sent request.
	var transport *http.Transport
	if bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		transport = bc.GetTransport()
	} else {
		transport = awshttp.NewBuildableClient().GetTransport()
	}
	transport.ExpectContinueTimeout = s3ExpectContinueTimeout
	awsCfg.HTTPClient = &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	cfg.Region = awsCfg.Region
	// Resolve the credentials now: a chain that finds none fails every
	// request before it is sent, which HeadBucket would report as an
	// unreachable store.
	if awsCfg.Credentials != nil {
		if _, err := awsCfg.Credentials.Retrieve(ctx); err != nil {
			return nil, fmt.Errorf("objstore: %s: no usable credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or configure the AWS SDK's credential chain: %w", cfg.where(), err)
		}
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		// AWS_MAX_ATTEMPTS must not override MaxAttempts: one setting, one
		// place.
		o.RetryMaxAttempts = 0
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	b := &S3Bucket{cfg: cfg, client: client, transport: transport}
	if err := b.checkBucket(ctx); err != nil {
		transport.CloseIdleConnections()
		return nil, err
	}
	return b, nil
}

// checkBucket asks for the bucket with HeadBucket and explains a failure.
func (b *S3Bucket) checkBucket(ctx context.Context) error {
	_, err := b.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.cfg.Bucket)})
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("objstore: %s: check bucket: %w", b.cfg.where(), ctxErr)
	}
	status, code := s3ErrorStatus(err)
	switch {
	case status == http.StatusNotFound || code == "NoSuchBucket":
		return fmt.Errorf("objstore: %s: the bucket does not exist (create it first): %w", b.cfg.where(), err)
	case status == http.StatusForbidden || status == http.StatusUnauthorized || isCredentialsError(code):
		return fmt.Errorf("objstore: %s: access denied: check the credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the AWS SDK's credential chain) and the bucket's policy: %w", b.cfg.where(), err)
	case status == http.StatusMovedPermanently || status == http.StatusTemporaryRedirect:
		return fmt.Errorf("objstore: %s: the bucket is in another region than %s; set region=: %w", b.cfg.where(), b.cfg.Region, err)
	case status == 0:
		return fmt.Errorf("objstore: %s: cannot reach the store (region %s): %w", b.cfg.where(), b.cfg.Region, err)
	}
	return fmt.Errorf("objstore: %s: check bucket: %w", b.cfg.where(), err)
}

// Config returns the configuration in use, with the region resolved.
func (b *S3Bucket) Config() S3Config { return b.cfg }

// begin checks the closed flag, the context and the key before a request.
func (b *S3Bucket) begin(ctx context.Context, key string) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return ValidateKey(key)
}

// Get reads the whole object.
func (b *S3Bucket) Get(ctx context.Context, key string) ([]byte, Attributes, error) {
	if err := b.begin(ctx, key); err != nil {
		return nil, Attributes{}, err
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.cfg.Bucket, Key: &key})
	if err != nil {
		return nil, Attributes{}, b.readError(ctx, "get", key, err)
	}
	defer out.Body.Close()
	attrs, err := attributes(key, out.ContentLength, out.ETag, out.LastModified)
	if err != nil {
		return nil, Attributes{}, err
	}
	// The content length is checked by the HTTP client against the bytes
	// that arrive; it sizes the buffer up to a bound, so a lying header
	// cannot make us allocate what was never sent.
	var buf bytes.Buffer
	buf.Grow(int(min(attrs.Size, 64<<20)))
	if _, err := buf.ReadFrom(out.Body); err != nil {
		return nil, Attributes{}, fmt.Errorf("s3: get %q: read body: %w", key, withContext(ctx, err))
	}
	if int64(buf.Len()) != attrs.Size {
		return nil, Attributes{}, fmt.Errorf("s3: get %q: read %d bytes, the store announced %d", key, buf.Len(), attrs.Size)
	}
	return buf.Bytes(), attrs, nil
}

// GetRange streams part of the object; the range rules are in the package
// doc. S3 cannot express two of them: a zero length (a Range header that
// asks for no bytes is ignored and the whole object sent), and offset ==
// size (416). Both are answered from the object's size, read with Stat.
func (b *S3Bucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if err := b.begin(ctx, key); err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, fmt.Errorf("s3: range of %q at offset %d: %w", key, offset, ErrInvalidRange)
	}
	if length == 0 {
		return b.emptyRange(ctx, key, offset)
	}
	in := &s3.GetObjectInput{Bucket: &b.cfg.Bucket, Key: &key}
	// No Range header for a whole object, so an empty object reads as
	// empty rather than failing as an unsatisfiable range.
	if offset > 0 || length > 0 {
		if length < 0 || length-1 > maxInt64-offset {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
		} else {
			in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
		}
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		if status, code := s3ErrorStatus(err); status == http.StatusRequestedRangeNotSatisfiable || code == "InvalidRange" {
			return b.emptyRange(ctx, key, offset)
		}
		return nil, b.readError(ctx, "get range of", key, err)
	}
	if in.Range != nil && out.ContentRange == nil {
		// A store that ignores Range sends the object from byte 0:
		// returning that as the range would be silent corruption.
		out.Body.Close()
		return nil, fmt.Errorf("s3: get range of %q: the store ignored the Range header %q", key, *in.Range)
	}
	return out.Body, nil
}

const maxInt64 = 1<<63 - 1

// emptyRange answers a range S3 would refuse or misread: an empty body if
// offset is within the object or at its end, else ErrInvalidRange.
func (b *S3Bucket) emptyRange(ctx context.Context, key string, offset int64) (io.ReadCloser, error) {
	attrs, err := b.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	if _, _, err := clampRange(key, attrs.Size, offset, 0); err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	return io.NopCloser(bytes.NewReader(nil)), nil
}

// Stat reads the object's attributes with HeadObject.
func (b *S3Bucket) Stat(ctx context.Context, key string) (Attributes, error) {
	if err := b.begin(ctx, key); err != nil {
		return Attributes{}, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.cfg.Bucket, Key: &key})
	if err != nil {
		return Attributes{}, b.readError(ctx, "stat", key, err)
	}
	return attributes(key, out.ContentLength, out.ETag, out.LastModified)
}

// Delete removes the object; S3 answers a missing key with success too.
func (b *S3Bucket) Delete(ctx context.Context, key string) error {
	if err := b.begin(ctx, key); err != nil {
		return err
	}
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.cfg.Bucket, Key: &key})
	if err != nil {
		if _, code := s3ErrorStatus(err); code == "NoSuchKey" {
			return nil
		}
		return fmt.Errorf("s3: delete %q: %w", key, withContext(ctx, err))
	}
	return nil
}

// List pages through ListObjectsV2, which returns keys in lexical (UTF-8
// byte) order; an out-of-order page is an error rather than a silent
// misorder.
func (b *S3Bucket) List(ctx context.Context, prefix string, fn func(key string, attrs Attributes) error) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	in := &s3.ListObjectsV2Input{Bucket: &b.cfg.Bucket, MaxKeys: aws.Int32(b.cfg.ListPageSize)}
	if prefix != "" {
		in.Prefix = &prefix
	}
	pages := s3.NewListObjectsV2Paginator(b.client, in)
	last := ""
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3: list %q: %w", prefix, withContext(ctx, err))
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			if key <= last && last != "" {
				return fmt.Errorf("s3: list %q: the store returned %q after %q, out of order", prefix, key, last)
			}
			last = key
			if !strings.HasPrefix(key, prefix) || ValidateKey(key) != nil {
				continue
			}
			attrs, err := attributes(key, obj.Size, obj.ETag, obj.LastModified)
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(key, attrs); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close marks the bucket closed and drops idle connections. Requests in
// flight finish. A second Close is a no-op.
func (b *S3Bucket) Close() error {
	if !b.closed.Swap(true) {
		b.transport.CloseIdleConnections()
	}
	return nil
}

// attributes builds Attributes from a response, which must carry an ETag:
// an empty one would turn a caller's IfMatch into an unconditional write.
func attributes(key string, size *int64, etag *string, modified *time.Time) (Attributes, error) {
	e := unquoteETag(etag)
	if e == "" {
		return Attributes{}, fmt.Errorf("s3: %q: the store returned no ETag", key)
	}
	if size == nil || *size < 0 {
		return Attributes{}, fmt.Errorf("s3: %q: the store returned no size", key)
	}
	return Attributes{Size: *size, ETag: e, LastModified: aws.ToTime(modified)}, nil
}

// unquoteETag strips the quotes S3 puts around ETags: callers see the bare
// value, and If-Match gets the quotes back (quoteETag).
func unquoteETag(etag *string) string {
	return strings.Trim(aws.ToString(etag), `"`)
}

func quoteETag(etag string) string { return `"` + etag + `"` }
