package metadata

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/agent/quota"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// quotasKey holds every client quota of the cluster (AlterClientQuotas).
// One object, as acls.json: quotas change rarely and every agent reads
// them whole.
const quotasKey = "quotas.json"

type quotasObject struct {
	Version int           `json:"version"`
	Entries []quota.Entry `json:"entries"`
}

// ClientQuotas returns every stored quota entry, and an ETag that changes
// when they do ("" when none were ever stored).
func (s *Store) ClientQuotas(ctx context.Context) ([]quota.Entry, string, error) {
	var obj quotasObject
	etag, err := s.getObject(ctx, quotasKey, &obj)
	if objstore.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("metadata: read %s: %w", quotasKey, err)
	}
	return obj.Entries, etag, nil
}

// UpdateClientQuotas replaces the entries with what fn makes of them, by
// CAS: fn may run more than once, each time on the entries as stored
// then, and must not keep them. It returns what was written.
func (s *Store) UpdateClientQuotas(ctx context.Context, fn func([]quota.Entry) ([]quota.Entry, error)) ([]quota.Entry, error) {
	var written []quota.Entry
	err := s.casLoop(ctx, "update client quotas", func() (bool, error) {
		var obj quotasObject
		etag, err := s.getObject(ctx, quotasKey, &obj)
		opts := objstore.PutOptions{IfMatch: etag}
		switch {
		case objstore.IsNotFound(err):
			opts = objstore.PutOptions{IfAbsent: true}
		case err != nil:
			return false, fmt.Errorf("read %s: %w", quotasKey, err)
		}
		next, err := fn(obj.Entries)
		if err != nil {
			return false, err
		}
		_, err = s.bucket.Put(ctx, quotasKey, encodeObject(quotasObject{Version: objectVersion, Entries: next}), opts)
		if objstore.IsPreconditionFailed(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("write %s: %w", quotasKey, err)
		}
		written = next
		return true, nil
	})
	return written, err
}
