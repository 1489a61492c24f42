// Package users keeps an agent's copy of the cluster's SCRAM users
// (docs/security.md): the credentials live in the store, one object per
// user (agent/metadata/users.go); SASL logins read this copy without
// waiting on the store, and Refresh brings it in line by listing the user
// objects and re-reading only those whose ETag changed. It also converts
// between internal/scram's credentials and the plain fields the store
// keeps, checking what it reads: a credential of an unknown mechanism or
// that does not validate makes its object corrupt.
package users

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/scram"
)

// Cache is the agent's copy of the users' credentials. The zero value is
// empty and ready.
type Cache struct {
	mu     sync.RWMutex
	byName map[string][]scram.Credential
	// byKey is what each cached object held when read, with its ETag.
	byKey map[string]cachedUser
}

type cachedUser struct {
	etag  string
	name  string
	creds []scram.Credential
}

// Credential returns user's credential for m, from memory: SASL logins
// call it and must not wait on the store.
func (c *Cache) Credential(user string, m *scram.Mechanism) (scram.Credential, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, cred := range c.byName[user] {
		if cred.Mechanism == m {
			return cred, true
		}
	}
	return scram.Credential{}, false
}

// Refresh brings the cache in line with the store. Objects that fail to
// read keep their old contents and the error is returned after the rest
// are read, so one bad object does not hide every other change.
func (c *Cache) Refresh(ctx context.Context, store *metadata.Store) error {
	keys, err := store.UserKeys(ctx)
	if err != nil {
		return err
	}
	c.mu.RLock()
	next := maps.Clone(c.byKey)
	c.mu.RUnlock()
	if next == nil {
		next = map[string]cachedUser{}
	}
	var errs []error
	for key, etag := range keys {
		if old, ok := next[key]; ok && old.etag == etag && etag != "" {
			continue
		}
		u, err := store.ReadUser(ctx, key)
		var creds []scram.Credential
		if err == nil {
			creds, err = Credentials(key, u)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		next[key] = cachedUser{etag: etag, name: u.Name, creds: creds}
	}
	for key := range next {
		if _, ok := keys[key]; !ok {
			delete(next, key)
		}
	}
	byName := make(map[string][]scram.Credential, len(next))
	for _, cu := range next {
		if len(cu.creds) > 0 {
			byName[cu.name] = cu.creds
		}
	}
	c.mu.Lock()
	c.byKey, c.byName = next, byName
	c.mu.Unlock()
	return errors.Join(errs...)
}

// Stored is c as the store keeps it.
func Stored(c scram.Credential) metadata.ScramCredential {
	return metadata.ScramCredential{Mechanism: c.Mechanism.Name(), Iterations: c.Iterations, Salt: c.Salt,
		StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

// Credentials checks the credentials of u, read from the object at key:
// one of an unknown mechanism or that does not validate makes the object
// corrupt (metadata.ErrCorrupt).
func Credentials(key string, u metadata.User) ([]scram.Credential, error) {
	out := make([]scram.Credential, 0, len(u.SCRAM))
	for _, sc := range u.SCRAM {
		m, err := scram.ByName(sc.Mechanism)
		if err != nil {
			return nil, &metadata.CorruptError{Key: key, Err: err}
		}
		c := scram.Credential{Mechanism: m, Salt: sc.Salt, Iterations: sc.Iterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}
		if err := c.Validate(); err != nil {
			return nil, &metadata.CorruptError{Key: key, Err: err}
		}
		out = append(out, c)
	}
	return out, nil
}
