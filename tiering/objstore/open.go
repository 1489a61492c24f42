package objstore

import (
	"context"
	"fmt"
	"strings"
)

// Open returns the bucket a --store setting names:
//
//	file:///abs/path      an fs bucket rooted at /abs/path
//	file://./rel/path     an fs bucket rooted at rel/path under the working directory
//	                      (file://../rel/path likewise)
//	mem://                a new, empty in-memory bucket (tests)
//	s3://bucket[/prefix][?param=value&...]
//	                      an S3 bucket (AWS S3, MinIO, Ceph), its keys under prefix
//
// The s3:// parameters, all optional:
//
//	endpoint=URL             the S3 service, e.g. http://127.0.0.1:9000 (default: AWS S3)
//	region=NAME              signing region (default: AWS_REGION, the shared config, else us-east-1)
//	path-style=true|false    bucket in the path, not the host name (default: true with an endpoint)
//	part-size=BYTES          multipart part size, at least 5 MiB (default 16 MiB)
//	upload-concurrency=N     parts of one upload in flight (default 4)
//	max-attempts=N           attempts per request, retries included (default 5)
//	sse=AES256|aws:kms|aws:kms:dsse
//	                         server-side encryption of every object written (default: the bucket's own)
//	kms-key-id=ID            the KMS key of sse=aws:kms (default: the account's aws/s3 key)
//	sse-bucket-key=true      an S3 Bucket Key for sse=aws:kms, which cuts KMS requests (and their cost)
//
// For example s3://strata/prod?endpoint=http://127.0.0.1:9000&region=us-east-1&path-style=true.
// Credentials never come from the URL (one that carries them is refused):
// they come from the AWS SDK's default chain, AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY first (see S3Config). Opening an s3:// store checks
// that the bucket exists and the credentials may use it.
//
// Any other scheme is refused with ErrUnsupportedScheme naming the schemes
// this build serves. The caller owns the bucket and closes it.
func Open(ctx context.Context, url string) (Bucket, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("objstore: store %q has no scheme (want file://, s3:// or mem://): %w", redactStoreURL(url), ErrUnsupportedScheme)
	}
	switch scheme {
	case "file":
		dir, err := fileStoreDir(url, rest)
		if err != nil {
			return nil, err
		}
		b, err := NewFS(dir)
		if err != nil {
			return nil, fmt.Errorf("objstore: store %q: %w", url, err)
		}
		return b, nil
	case "mem":
		if rest != "" {
			return nil, fmt.Errorf("objstore: store %q: mem:// takes no path", url)
		}
		return NewMem(), nil
	case "s3":
		cfg, prefix, err := parseS3URL(url)
		if err != nil {
			return nil, err
		}
		b, err := NewS3(ctx, cfg)
		if err != nil {
			return nil, err
		}
		// parseS3URL validated the prefix, so this does not fail; if it
		// did, the bucket must not leak.
		pb, err := WithPrefix(b, prefix)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("objstore: store %q: %w", redactStoreURL(url), err)
		}
		return pb, nil
	default:
		return nil, fmt.Errorf("objstore: store %q: scheme %q: %w; this build supports file://, s3:// and mem://", redactStoreURL(url), scheme, ErrUnsupportedScheme)
	}
}

// fileStoreDir returns the directory a file:// store URL names; rest is the
// URL after "file://". The form file://relative/path is refused: in a file
// URL the part after "//" up to the next "/" is a host (RFC 8089), so readers
// and tools disagree on whether it means /path on host "relative", the
// absolute /relative/path or relative/path; a store must not land in a
// directory its operator did not mean. A relative directory is written with
// a leading "./" or "../", which no host name has.
func fileStoreDir(url, rest string) (string, error) {
	switch {
	case rest == "":
		return "", fmt.Errorf("objstore: store %q names no directory", url)
	case strings.ContainsAny(rest, "?#"):
		return "", fmt.Errorf("objstore: store %q: file URLs take no query or fragment", url)
	case strings.HasPrefix(rest, "/"), rest == ".", rest == "..",
		strings.HasPrefix(rest, "./"), strings.HasPrefix(rest, "../"):
		return rest, nil
	}
	return "", fmt.Errorf("objstore: store %q is ambiguous: write file:///absolute/path for an absolute directory or file://./relative/path for one under the working directory", url)
}
