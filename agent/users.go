package agent

// SCRAM users (docs/security.md): the agent's side of kafka.Users. The
// credentials live in the store (agent/metadata/users.go); each agent keeps
// a copy that SASL logins read without waiting on the store, refreshed
// every --credentials-refresh-interval by listing users/ and re-reading
// only the objects whose ETag changed, and at once after this agent
// changes one. A change made on another agent therefore reaches this one
// within one interval.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/internal/scram"
)

// userCache is the agent's copy of the users' credentials.
type userCache struct {
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

// credential returns user's credential for m.
func (c *userCache) credential(user string, m *scram.Mechanism) (scram.Credential, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, cred := range c.byName[user] {
		if cred.Mechanism == m {
			return cred, true
		}
	}
	return scram.Credential{}, false
}

// refresh brings the cache in line with the store. Objects that fail to
// read keep their old contents and the error is returned after the rest
// are read, so one bad object does not hide every other change.
func (c *userCache) refresh(ctx context.Context, store *metadata.Store) error {
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
			creds, err = credentials(key, u)
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

// usersLoop refreshes the cache every CredentialsRefreshInterval.
func (a *Agent) usersLoop() { a.every(a.cfg.CredentialsRefreshInterval, a.refreshUsers) }

func (a *Agent) refreshUsers() {
	ctx, cancel := context.WithTimeout(context.Background(), max(a.cfg.CredentialsRefreshInterval, 5*time.Second))
	defer cancel()
	if err := a.users.refresh(ctx, a.store); err != nil {
		a.logger.Warn("refresh SCRAM credentials from the store", "err", err)
	}
}

// bootstrapUsers applies --add-scram: each credential is created when the
// user has none of that mechanism, as kafka-storage format --add-scram does.
func (a *Agent) bootstrapUsers(ctx context.Context) error {
	for _, spec := range a.cfg.AddScram {
		b, err := scram.ParseBootstrap(spec)
		if err != nil {
			return fmt.Errorf("--add-scram: %w", err) // checked by Validate; the salt is random
		}
		created, err := a.store.UpsertScramCredential(ctx, b.User, storedCredential(b.Credential), true)
		if err != nil {
			return fmt.Errorf("--add-scram user %q: %w", b.User, err)
		}
		if created {
			a.logger.Info("SCRAM credential created", "user", b.User, "mechanism", b.Credential.Mechanism.Name())
		}
	}
	return a.users.refresh(ctx, a.store)
}

// ScramCredential implements kafka.Users from the cache.
func (a *Agent) ScramCredential(user string, m *scram.Mechanism) (scram.Credential, bool) {
	return a.users.credential(user, m)
}

// ScramUsers implements kafka.Users, reading the store.
func (a *Agent) ScramUsers(ctx context.Context) (map[string][]scram.Credential, error) {
	users, err := a.store.Users(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]scram.Credential, len(users))
	for _, u := range users {
		creds, err := credentials(metadata.UsersPrefix+u.Name, u)
		if err != nil {
			return nil, err
		}
		out[u.Name] = creds
	}
	return out, nil
}

// UpsertScramCredential implements kafka.Users.
func (a *Agent) UpsertScramCredential(ctx context.Context, user string, c scram.Credential) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if _, err := a.store.UpsertScramCredential(ctx, user, storedCredential(c), false); err != nil {
		return err
	}
	a.refreshUsers()
	return nil
}

// DeleteScramCredential implements kafka.Users.
func (a *Agent) DeleteScramCredential(ctx context.Context, user string, m *scram.Mechanism) error {
	err := a.store.DeleteScramCredential(ctx, user, m.Name())
	if errors.Is(err, metadata.ErrUnknownCredential) {
		return fmt.Errorf("%w: %w", kafka.ErrNoSuchCredential, err)
	}
	if err != nil {
		return err
	}
	a.refreshUsers()
	return nil
}

// storedCredential is c as the store keeps it.
func storedCredential(c scram.Credential) metadata.ScramCredential {
	return metadata.ScramCredential{Mechanism: c.Mechanism.Name(), Iterations: c.Iterations, Salt: c.Salt,
		StoredKey: c.StoredKey, ServerKey: c.ServerKey}
}

// credentials checks the credentials of u, read from the object at key:
// one of an unknown mechanism or that does not validate makes the object
// corrupt (metadata.ErrCorrupt).
func credentials(key string, u metadata.User) ([]scram.Credential, error) {
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
