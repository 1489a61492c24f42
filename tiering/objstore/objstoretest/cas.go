// Package objstoretest is the acceptance suite every objstore.Bucket
// backend passes: mem, fs, and (with a live server) S3/MinIO. It tests only
// behaviour an S3 store also has, plus the key rules of
// objstore.ValidateKey that every backend enforces.
//
// A backend's test calls Run with a constructor that returns a fresh, empty
// bucket per subtest and registers its own cleanup (t.Cleanup).
package objstoretest

import (
	"context"
	"fmt"
	"strconv"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// CASIncrement adds one to the decimal counter stored at key (a missing key
// counts as 0) with the read, conditional-write, retry-on-conflict loop
// that cluster metadata uses. It gives up after maxAttempts lost races and
// returns how many attempts it made. It is exported so backends can run it
// from several processes against one store.
func CASIncrement(ctx context.Context, b objstore.Bucket, key string, maxAttempts int) (attempts int, err error) {
	for attempts = 1; attempts <= maxAttempts; attempts++ {
		data, attrs, err := b.Get(ctx, key)
		var opts objstore.PutOptions
		var n int64
		switch {
		case objstore.IsNotFound(err):
			opts.IfAbsent = true
		case err != nil:
			return attempts, fmt.Errorf("read counter: %w", err)
		default:
			n, err = strconv.ParseInt(string(data), 10, 64)
			if err != nil {
				return attempts, fmt.Errorf("counter holds %q: %w", data, err)
			}
			opts.IfMatch = attrs.ETag
		}
		_, err = b.Put(ctx, key, []byte(strconv.FormatInt(n+1, 10)), opts)
		if objstore.IsPreconditionFailed(err) {
			continue // someone else won; read again
		}
		if err != nil {
			return attempts, fmt.Errorf("write counter: %w", err)
		}
		return attempts, nil
	}
	return maxAttempts, fmt.Errorf("counter %q: lost the race %d times", key, maxAttempts)
}

// ReadCounter returns the counter CASIncrement maintains at key.
func ReadCounter(ctx context.Context, b objstore.Bucket, key string) (int64, error) {
	data, _, err := b.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(data), 10, 64)
}
