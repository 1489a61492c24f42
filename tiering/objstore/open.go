package objstore

import (
	"context"
	"fmt"
	"strings"
)

// Open returns the bucket a --store setting names:
//
//	file:///abs/path      an fs bucket rooted at /abs/path
//	file://relative/path  an fs bucket rooted at relative/path (from the working directory)
//	mem://                a new, empty in-memory bucket (tests)
//
// Any other scheme, s3:// included, is refused with ErrUnsupportedScheme
// naming the schemes this build serves. The caller owns the bucket and
// closes it.
func Open(ctx context.Context, url string) (Bucket, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("objstore: store %q has no scheme (want file:// or mem://): %w", url, ErrUnsupportedScheme)
	}
	switch scheme {
	case "file":
		if rest == "" {
			return nil, fmt.Errorf("objstore: store %q names no directory", url)
		}
		if strings.ContainsAny(rest, "?#") {
			return nil, fmt.Errorf("objstore: store %q: file URLs take no query or fragment", url)
		}
		b, err := NewFS(rest)
		if err != nil {
			return nil, fmt.Errorf("objstore: store %q: %w", url, err)
		}
		return b, nil
	case "mem":
		if rest != "" {
			return nil, fmt.Errorf("objstore: store %q: mem:// takes no path", url)
		}
		return NewMem(), nil
	default:
		return nil, fmt.Errorf("objstore: store %q: scheme %q: %w; this build supports file:// and mem://", url, scheme, ErrUnsupportedScheme)
	}
}
