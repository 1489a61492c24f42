// Package users keeps an agent's copy of the cluster's SCRAM users
// (docs/security.md): the credentials live in the store, one object per
// user (agent/metadata/users.go); SASL logins read this copy without
// waiting on the store, and Refresh brings it in line by listing the user
// objects and re-reading only those whose ETag changed; the changes that
// AlterUserScramCredentials makes go through it to the store. It also converts
// between internal/scram's credentials and the plain fields the store
// keeps, checking what it reads: a credential of an unknown mechanism or
// that does not validate makes its object corrupt.
package users

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/scram"
)

// Users is the agent's side of kafka.Users: its copy of the users'
// credentials (a metadata.Cache, refreshed every
// --credentials-refresh-interval and right after this agent changes a
// user) and the writes to the store's. Safe for concurrent use;
// ScramCredential never blocks.
type Users struct {
	store *metadata.Store
	cache metadata.Cache[snapshot]
}

// snapshot is one copy: the credentials by user name, and what each
// object held when read, by key, with its ETag.
type snapshot struct {
	byName map[string][]scram.Credential
	byKey  map[string]cachedUser
}

type cachedUser struct {
	etag  string
	name  string
	creds []scram.Credential
}

// New is the Users of store, empty until Refresh.
func New(store *metadata.Store, logger *slog.Logger) *Users {
	u := &Users{store: store}
	u.cache = metadata.Cache[snapshot]{Read: u.read, What: "SCRAM credentials", Logger: logger}
	return u
}

// ScramCredential implements kafka.Users from memory: SASL logins call
// it and must not wait on the store.
func (u *Users) ScramCredential(user string, m *scram.Mechanism) (scram.Credential, bool) {
	for _, cred := range u.cache.Load().byName[user] {
		if cred.Mechanism == m {
			return cred, true
		}
	}
	return scram.Credential{}, false
}

// Refresh brings the copy in line with the store. Objects that fail to
// read keep their old contents and the error is returned after the rest
// are read, so one bad object does not hide every other change.
func (u *Users) Refresh(ctx context.Context) error { return u.cache.Refresh(ctx) }

// read lists the user objects and re-reads only those whose ETag
// changed.
func (u *Users) read(ctx context.Context, prev snapshot) (snapshot, error) {
	keys, err := u.store.UserKeys(ctx)
	if err != nil {
		return prev, err
	}
	next := maps.Clone(prev.byKey)
	if next == nil {
		next = map[string]cachedUser{}
	}
	var errs []error
	for key, etag := range keys {
		if old, ok := next[key]; ok && old.etag == etag && etag != "" {
			continue
		}
		stored, err := u.store.ReadUser(ctx, key)
		var creds []scram.Credential
		if err == nil {
			creds, err = Credentials(key, stored)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		next[key] = cachedUser{etag: etag, name: stored.Name, creds: creds}
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
	return snapshot{byName: byName, byKey: next}, errors.Join(errs...)
}

// Bootstrap creates each credential of specs (--add-scram) when its user
// has none of that mechanism, as kafka-storage format --add-scram does,
// and reads the users. It reports the credentials it created with
// created.
func (u *Users) Bootstrap(ctx context.Context, specs []scram.Bootstrap, created func(user, mechanism string)) error {
	for _, b := range specs {
		ok, err := u.store.UpsertScramCredential(ctx, b.User, Stored(b.Credential), true)
		if err != nil {
			return fmt.Errorf("--add-scram user %q: %w", b.User, err)
		}
		if ok {
			created(b.User, b.Credential.Mechanism.Name())
		}
	}
	return u.Refresh(ctx)
}

// ScramUsers implements kafka.Users, reading the store.
func (u *Users) ScramUsers(ctx context.Context) (map[string][]scram.Credential, error) {
	stored, err := u.store.Users(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]scram.Credential, len(stored))
	for _, su := range stored {
		creds, err := Credentials(metadata.UsersPrefix+su.Name, su)
		if err != nil {
			return nil, err
		}
		out[su.Name] = creds
	}
	return out, nil
}

// UpsertScramCredential implements kafka.Users.
func (u *Users) UpsertScramCredential(ctx context.Context, user string, c scram.Credential) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if _, err := u.store.UpsertScramCredential(ctx, user, Stored(c), false); err != nil {
		return err
	}
	u.cache.Changed()
	return nil
}

// DeleteScramCredential implements kafka.Users; a user without a
// credential of m is metadata.ErrUnknownCredential.
func (u *Users) DeleteScramCredential(ctx context.Context, user string, m *scram.Mechanism) error {
	if err := u.store.DeleteScramCredential(ctx, user, m.Name()); err != nil {
		return err
	}
	u.cache.Changed()
	return nil
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
