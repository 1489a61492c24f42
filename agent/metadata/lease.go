package metadata

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
)

// A lease names the one agent that does a cluster-wide job (the balancer,
// docs/design.md §8) until it expires. It is taken and renewed by CAS, so two
// agents never both hold it; one that stops renewing loses it after its
// term, and the next holder continues from the states in the store.
type Lease struct {
	Holder  int32
	Expires time.Time
}

type leaseObject struct {
	Version int       `json:"version"`
	Holder  int32     `json:"holder"`
	Expires time.Time `json:"expires"`
}

func leaseKey(name string) string { return "leases/" + name + jsonSuffix }

// AcquireLease takes or renews lease name for agent self until now+term,
// if it is free, expired or already self's. A renewal never moves the
// expiry earlier: a holder whose clock stepped back (or a round run with an
// older time than the last) keeps the term it announced, which the other
// agents are counting on. It reports whether self holds it afterwards,
// and the lease as stored.
func (s *Store) AcquireLease(ctx context.Context, name string, self int32, now time.Time, term time.Duration) (Lease, bool, error) {
	var obj leaseObject
	etag, err := s.getObject(ctx, leaseKey(name), &obj)
	switch {
	case objstore.IsNotFound(err):
		etag = ""
	case err != nil:
		return Lease{}, false, fmt.Errorf("read lease %s: %w", name, err)
	}
	cur := Lease{Holder: obj.Holder, Expires: obj.Expires}
	if etag != "" && cur.Holder != self && now.Before(cur.Expires) {
		return cur, false, nil
	}
	next := leaseObject{Version: objectVersion, Holder: self, Expires: now.Add(term)}
	if etag != "" && cur.Holder == self && cur.Expires.After(next.Expires) {
		next.Expires = cur.Expires
	}
	opts := objstore.PutOptions{IfMatch: etag}
	if etag == "" {
		opts = objstore.PutOptions{IfAbsent: true}
	}
	_, err = s.bucket.Put(ctx, leaseKey(name), encodeObject(next), opts)
	if objstore.IsPreconditionFailed(err) {
		return cur, false, nil // another agent took it first
	}
	if err != nil {
		return cur, false, fmt.Errorf("write lease %s: %w", name, err)
	}
	return Lease{Holder: self, Expires: next.Expires}, true, nil
}
