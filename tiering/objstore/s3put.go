package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sync/errgroup"
)

// Put uploads data; see S3Bucket for conditions, parts and retries.
func (b *S3Bucket) Put(ctx context.Context, key string, data []byte, opts PutOptions) (string, error) {
	return b.PutReader(ctx, key, bytes.NewReader(data), int64(len(data)), opts)
}

// PutReader uploads the first size bytes of r: one PutObject up to
// PartSize bytes, a multipart upload above. Each request body is a section
// of r, which the SDK re-reads from the start of the section when it
// retries.
func (b *S3Bucket) PutReader(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	if err := b.begin(ctx, key); err != nil {
		return "", err
	}
	if err := opts.validate(); err != nil {
		return "", err
	}
	if err := checkSize(key, size); err != nil {
		return "", err
	}
	if size > S3MaxObjectSize {
		return "", fmt.Errorf("s3: put %q: %d bytes is more than S3's largest object (%d)", key, size, int64(S3MaxObjectSize))
	}
	src := &recordingReaderAt{r: r, size: size}
	var etag string
	var err error
	if size <= b.cfg.PartSize {
		etag, err = b.putObject(ctx, key, src, size, opts)
	} else {
		etag, err = b.putMultipart(ctx, key, src, size, opts)
	}
	if err != nil {
		// The SDK and net/http wrap a body's read error in ways errors.Is
		// cannot see through; the caller's own error is the cause.
		if readErr := src.err(); readErr != nil {
			return "", fmt.Errorf("s3: put %q: read the source: %w", key, readErr)
		}
		if lost := b.conditionLost(ctx, key, opts, err); lost != nil {
			return "", lost
		}
		return "", err
	}
	return etag, nil
}

// conditionLost decides a conditional write that failed without any
// answer from the store (every attempt lost its connection: a refusal can
// be lost that way when it races the body). If the condition does not hold
// now, the write cannot succeed, whatever happened to it: that is
// ErrPreconditionFailed, and the caller re-reads. Otherwise, or if the key
// cannot be read, it returns nil and the original error stands.
func (b *S3Bucket) conditionLost(ctx context.Context, key string, opts PutOptions, err error) error {
	if !opts.IfAbsent && opts.IfMatch == "" || ctx.Err() != nil || errors.Is(err, ErrPreconditionFailed) {
		return nil // unconditional, cancelled, or the store's answer was a lost condition
	}
	if status, _ := s3ErrorStatus(err); status != 0 {
		return nil // the store answered; writeError has mapped it
	}
	attrs, statErr := b.Stat(ctx, key)
	switch {
	case opts.IfAbsent && statErr == nil:
		return fmt.Errorf("s3: put %q %s: no answer (%v), and the key now exists: %w", key, describe(opts), err, ErrPreconditionFailed)
	case opts.IfMatch != "" && IsNotFound(statErr):
		return fmt.Errorf("s3: put %q %s: no answer (%v), and the key is now missing: %w", key, describe(opts), err, ErrPreconditionFailed)
	case opts.IfMatch != "" && statErr == nil && attrs.ETag != opts.IfMatch:
		return fmt.Errorf("s3: put %q %s: no answer (%v), and the ETag is now %q: %w", key, describe(opts), err, attrs.ETag, ErrPreconditionFailed)
	}
	return nil
}

// encryption is the server-side encryption settings of a new object: the
// zero values (the bucket's default) unless S3Config.SSE is set.
func (b *S3Bucket) encryption() (types.ServerSideEncryption, *string, *bool) {
	if b.cfg.SSE == "" {
		return "", nil, nil
	}
	var keyID *string
	if b.cfg.SSEKMSKeyID != "" {
		keyID = aws.String(b.cfg.SSEKMSKeyID)
	}
	var bucketKey *bool
	if b.cfg.SSEBucketKey {
		bucketKey = aws.Bool(true)
	}
	return types.ServerSideEncryption(b.cfg.SSE), keyID, bucketKey
}

// putObject sends the object in one PutObject.
func (b *S3Bucket) putObject(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (string, error) {
	in := &s3.PutObjectInput{
		Bucket:        &b.cfg.Bucket,
		Key:           &key,
		Body:          io.NewSectionReader(r, 0, size),
		ContentLength: aws.Int64(size),
	}
	in.ServerSideEncryption, in.SSEKMSKeyId, in.BucketKeyEnabled = b.encryption()
	if opts.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	if opts.IfMatch != "" {
		in.IfMatch = aws.String(quoteETag(opts.IfMatch))
	}
	out, err := b.client.PutObject(ctx, in)
	if err != nil {
		return "", b.writeError(ctx, key, opts, err)
	}
	return etagOf(key, out.ETag)
}

// putMultipart uploads the object in parts, at most UploadConcurrency at
// a time, and completes the upload under opts: the condition holds for the
// object as a whole, decided when it appears. Any failure aborts the
// upload, so no parts are left to be billed.
func (b *S3Bucket) putMultipart(ctx context.Context, key string, r io.ReaderAt, size int64, opts PutOptions) (etag string, err error) {
	create := &s3.CreateMultipartUploadInput{Bucket: &b.cfg.Bucket, Key: &key}
	create.ServerSideEncryption, create.SSEKMSKeyId, create.BucketKeyEnabled = b.encryption()
	created, err := b.client.CreateMultipartUpload(ctx, create)
	if err != nil {
		return "", b.writeError(ctx, key, PutOptions{}, err)
	}
	uploadID := created.UploadId
	if aws.ToString(uploadID) == "" {
		return "", fmt.Errorf("s3: put %q: the store returned no upload id", key)
	}
	defer func() {
		if err != nil {
			if abortErr := b.abort(ctx, key, uploadID); abortErr != nil {
				err = fmt.Errorf("%w (and aborting upload %s failed: %v)", err, *uploadID, abortErr)
			}
		}
	}()

	partSize := b.cfg.partSizeFor(size)
	count := int((size + partSize - 1) / partSize)
	parts := make([]types.CompletedPart, count)
	g, partCtx := errgroup.WithContext(ctx)
	g.SetLimit(b.cfg.UploadConcurrency)
	for i := range count {
		offset := int64(i) * partSize
		n := min(partSize, size-offset)
		number := aws.Int32(int32(i + 1))
		g.Go(func() error {
			out, err := b.client.UploadPart(partCtx, &s3.UploadPartInput{
				Bucket:        &b.cfg.Bucket,
				Key:           &key,
				UploadId:      uploadID,
				PartNumber:    number,
				Body:          io.NewSectionReader(r, offset, n),
				ContentLength: aws.Int64(n),
			})
			if err != nil {
				return fmt.Errorf("s3: put %q: part %d of %d: %w", key, *number, count, withContext(ctx, err))
			}
			if out.ETag == nil || *out.ETag == "" {
				return fmt.Errorf("s3: put %q: part %d: the store returned no ETag", key, *number)
			}
			parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: number}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", err
	}

	in := &s3.CompleteMultipartUploadInput{
		Bucket:          &b.cfg.Bucket,
		Key:             &key,
		UploadId:        uploadID,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}
	if opts.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	if opts.IfMatch != "" {
		in.IfMatch = aws.String(quoteETag(opts.IfMatch))
	}
	out, err := b.client.CompleteMultipartUpload(ctx, in)
	if err != nil {
		return "", b.writeError(ctx, key, opts, err)
	}
	return etagOf(key, out.ETag)
}

// abort ends a failed multipart upload. It runs even if ctx is done (that
// may be why the upload failed), bounded by abortTimeout.
func (b *S3Bucket) abort(ctx context.Context, key string, uploadID *string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.cfg.Bucket, Key: &key, UploadId: uploadID})
	if _, code := s3ErrorStatus(err); code == "NoSuchUpload" {
		return nil // already gone: completed or aborted
	}
	return err
}

// etagOf returns the ETag of a successful write, which must have one.
func etagOf(key string, etag *string) (string, error) {
	e := unquoteETag(etag)
	if e == "" {
		return "", fmt.Errorf("s3: put %q: the store returned no ETag", key)
	}
	return e, nil
}

// recordingReaderAt passes reads through to the caller's reader and keeps
// the first error it returned, or io.ErrUnexpectedEOF if it ended before
// size bytes, so PutReader can report that cause instead of whatever the
// transport made of it.
type recordingReaderAt struct {
	r    io.ReaderAt
	size int64

	mu    sync.Mutex
	first error
}

func (rr *recordingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := rr.r.ReadAt(p, off)
	if err == nil {
		return n, nil
	}
	if errors.Is(err, io.EOF) {
		if off+int64(n) >= rr.size {
			return n, err // the end of the object: not a failure
		}
		err = fmt.Errorf("read %d of %d bytes: %w", off+int64(n), rr.size, io.ErrUnexpectedEOF)
	}
	rr.mu.Lock()
	if rr.first == nil {
		rr.first = err
	}
	rr.mu.Unlock()
	return n, err
}

func (rr *recordingReaderAt) err() error {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.first
}
