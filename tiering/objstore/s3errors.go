package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// How S3 answers map onto the package's errors:
//
//	404 NoSuchKey, or 404 without a body (HEAD)     ErrNotFound (reads)
//	404 NoSuchKey on a Put with IfMatch             ErrPreconditionFailed (AWS: "no object to match")
//	412 PreconditionFailed                          ErrPreconditionFailed
//	409 ConditionalRequestConflict                  ErrPreconditionFailed (a concurrent conditional write)
//	416 InvalidRange                                ErrInvalidRange, or an empty body at offset == size
//	404 NoSuchBucket                                an error, never ErrNotFound
//
// A missing bucket is not a missing object: metadata code that reads "not
// found" as "create it" must not do so against a bucket that is gone. A
// HEAD answer has no body, so Stat cannot tell the two apart; NewS3 checks
// that the bucket exists. (MinIO, loaded, can also answer NoSuchKey for a
// moment after a bucket is deleted.)

// s3ErrorStatus returns the HTTP status and the S3 error code of err, if
// it came from an S3 answer (0 and "" for a connection error).
func s3ErrorStatus(err error) (status int, code string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// isCredentialsError reports S3 codes that mean the credentials are wrong.
func isCredentialsError(code string) bool {
	switch code {
	case "AccessDenied", "Forbidden", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
		return true
	}
	return false
}

// isNoSuchKey reports an answer that means the key (not the bucket) is
// missing.
func isNoSuchKey(status int, code string) bool {
	return code == "NoSuchKey" || (status == http.StatusNotFound && (code == "" || code == "NotFound"))
}

// readError maps the error of a read (Get, GetRange, Stat).
func (b *S3Bucket) readError(ctx context.Context, op, key string, err error) error {
	status, code := s3ErrorStatus(err)
	switch {
	case isNoSuchKey(status, code):
		return fmt.Errorf("s3: %s %q: %w", op, key, ErrNotFound)
	case code == "NoSuchBucket":
		return fmt.Errorf("s3: %s %q: %s does not exist: %w", op, key, b.cfg.where(), err)
	}
	return fmt.Errorf("s3: %s %q: %w", op, key, withContext(ctx, err))
}

// writeError maps the error of a write (PutObject, or the
// CompleteMultipartUpload that ends a multipart one) under opts.
func (b *S3Bucket) writeError(ctx context.Context, key string, opts PutOptions, err error) error {
	status, code := s3ErrorStatus(err)
	switch {
	case status == http.StatusPreconditionFailed || code == "PreconditionFailed":
		return fmt.Errorf("s3: put %q %s: %w", key, describe(opts), ErrPreconditionFailed)
	case status == http.StatusConflict && code == "ConditionalRequestConflict":
		return fmt.Errorf("s3: put %q %s: a concurrent conditional write: %w", key, describe(opts), ErrPreconditionFailed)
	case opts.IfMatch != "" && isNoSuchKey(status, code):
		return fmt.Errorf("s3: put %q %s: key missing: %w", key, describe(opts), ErrPreconditionFailed)
	case code == "NoSuchBucket":
		return fmt.Errorf("s3: put %q: %s does not exist: %w", key, b.cfg.where(), err)
	}
	return fmt.Errorf("s3: put %q: %w", key, withContext(ctx, err))
}

func describe(opts PutOptions) string {
	switch {
	case opts.IfAbsent:
		return "if absent"
	case opts.IfMatch != "":
		return fmt.Sprintf("if match %q", opts.IfMatch)
	}
	return "unconditionally"
}

// withContext makes a failure caused by the caller's context match
// context.Canceled or context.DeadlineExceeded with errors.Is, however the
// SDK wrapped it.
func withContext(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w (%v)", ctxErr, err)
	}
	return err
}
