package metadata

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// Cluster-wide lists, one object each: they change rarely and every agent
// reads them whole, so one GET per re-read beats a listing.
// MaxObjectBytes (4 MiB) holds about 20,000 entries. The entries' type is
// their owner's (agent/acl's Entry, agent/quota's Entry); this package
// stores them as they are.
const (
	// ACLsKey holds every access control entry (--authorizer acl).
	ACLsKey = "acls.json"
	// QuotasKey holds every client quota (AlterClientQuotas).
	QuotasKey = "quotas.json"
)

type listObject[E any] struct {
	Version int `json:"version"`
	Entries []E `json:"entries"`
}

// ReadList returns the entries of the list at key, and an ETag that
// changes when they do ("" when none were ever stored).
func ReadList[E any](ctx context.Context, s *Store, key string) ([]E, string, error) {
	var obj listObject[E]
	etag, err := s.getObject(ctx, key, &obj)
	if objstore.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("metadata: read %s: %w", key, err)
	}
	return obj.Entries, etag, nil
}

// UpdateList replaces the entries of the list at key with what fn makes
// of them, by CAS: fn may run more than once, each time on the entries as
// stored then, and must not keep them. It returns what was written.
func UpdateList[E any](ctx context.Context, s *Store, key string, fn func([]E) ([]E, error)) ([]E, error) {
	var written []E
	err := s.casLoop(ctx, "update "+key, func() (bool, error) {
		var obj listObject[E]
		etag, err := s.getObject(ctx, key, &obj)
		opts := objstore.PutOptions{IfMatch: etag}
		switch {
		case objstore.IsNotFound(err):
			opts = objstore.PutOptions{IfAbsent: true}
		case err != nil:
			return false, fmt.Errorf("read %s: %w", key, err)
		}
		next, err := fn(append([]E(nil), obj.Entries...))
		if err != nil {
			return false, err
		}
		_, err = s.bucket.Put(ctx, key, encodeObject(listObject[E]{Version: objectVersion, Entries: next}), opts)
		if objstore.IsPreconditionFailed(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("write %s: %w", key, err)
		}
		written = next
		return true, nil
	})
	return written, err
}
