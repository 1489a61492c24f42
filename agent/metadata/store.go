package metadata

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// Store reads and writes cluster metadata in a Bucket. It is stateless
// apart from its settings; see the package doc for the guarantees.
type Store struct {
	bucket   objstore.Bucket
	logger   *slog.Logger
	settings Settings
	now      func() time.Time // replaced by tests that need old objects
}

// New returns a Store over b with DefaultSettings. The Store does not own b:
// closing b is the caller's job. A nil logger discards logs.
func New(b objstore.Bucket, logger *slog.Logger) *Store {
	s, err := NewWithSettings(b, logger, DefaultSettings())
	if err != nil {
		panic(err) // the defaults are valid; failure is a bug
	}
	return s
}

// NewWithSettings is New with explicit limits.
func NewWithSettings(b objstore.Bucket, logger *slog.Logger, settings Settings) (*Store, error) {
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{bucket: b, logger: logger, settings: settings, now: time.Now}, nil
}

// casLoop runs attempt until it reports done, returns an error, or the retry
// budget is spent. attempt returns done=false after losing a conditional
// write; it must re-read everything it decides on.
func (s *Store) casLoop(ctx context.Context, what string, attempt func() (done bool, err error)) error {
	for i := range s.settings.CASRetries {
		done, err := attempt()
		if err != nil || done {
			return err
		}
		if i+1 == s.settings.CASRetries {
			break
		}
		if err := s.backoff(ctx, i); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return fmt.Errorf("%w: %s: gave up after %d attempts: %w",
		ErrConflict, what, s.settings.CASRetries, objstore.ErrPreconditionFailed)
}

// backoff waits a random time in [min, min<<attempt] capped at max ("full
// jitter"), so writers that collided do not collide again in step.
func (s *Store) backoff(ctx context.Context, attempt int) error {
	lo, hi := s.settings.CASBackoffMin, s.settings.CASBackoffMax
	ceiling := lo << min(attempt, 20)
	if ceiling > hi || ceiling <= 0 {
		ceiling = hi
	}
	d := lo
	if ceiling > lo {
		d += rand.N(ceiling - lo)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// getObject reads and decodes key; a missing key returns the objstore error
// unchanged so callers can test objstore.IsNotFound.
func (s *Store) getObject(ctx context.Context, key string, v any) (etag string, err error) {
	data, attrs, err := s.bucket.Get(ctx, key)
	if err != nil {
		return "", err
	}
	if err := decodeObject(key, data, s.settings.MaxObjectBytes, v); err != nil {
		return "", err
	}
	return attrs.ETag, nil
}
