package metadata

import (
	"context"
	"fmt"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/tiering/objstore"
)

// aclsKey holds every access control entry of the cluster (--authorizer
// acl). One object: ACLs change rarely and are read whole by every agent,
// so one GET per re-read beats a listing. MaxObjectBytes (4 MiB) holds
// about 20,000 entries.
const aclsKey = "acls.json"

type aclsObject struct {
	Version int         `json:"version"`
	Entries []acl.Entry `json:"entries"`
}

// ACLs returns every stored entry, and an ETag that changes when they do
// ("" when none were ever stored).
func (s *Store) ACLs(ctx context.Context) ([]acl.Entry, string, error) {
	var obj aclsObject
	etag, err := s.getObject(ctx, aclsKey, &obj)
	if objstore.IsNotFound(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("metadata: read %s: %w", aclsKey, err)
	}
	return obj.Entries, etag, nil
}

// UpdateACLs replaces the entries with what fn makes of them, by CAS: fn
// may run more than once, each time on the entries as stored then, and
// must not keep them. It returns what was written.
func (s *Store) UpdateACLs(ctx context.Context, fn func([]acl.Entry) ([]acl.Entry, error)) ([]acl.Entry, error) {
	var written []acl.Entry
	err := s.casLoop(ctx, "update acls", func() (bool, error) {
		var obj aclsObject
		etag, err := s.getObject(ctx, aclsKey, &obj)
		opts := objstore.PutOptions{IfMatch: etag}
		switch {
		case objstore.IsNotFound(err):
			opts = objstore.PutOptions{IfAbsent: true}
		case err != nil:
			return false, fmt.Errorf("read %s: %w", aclsKey, err)
		}
		next, err := fn(append([]acl.Entry(nil), obj.Entries...))
		if err != nil {
			return false, err
		}
		_, err = s.bucket.Put(ctx, aclsKey, encodeObject(aclsObject{Version: objectVersion, Entries: next}), opts)
		if objstore.IsPreconditionFailed(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("write %s: %w", aclsKey, err)
		}
		written = next
		return true, nil
	})
	return written, err
}
