package agent

// SCRAM users (docs/security.md): the agent's side of kafka.Users over
// agent/users' cache, refreshed every --credentials-refresh-interval and
// at once after this agent changes a user, so a change made on another
// agent reaches this one within one interval.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/users"
	"github.com/strata-streaming/strata/internal/scram"
)

// usersLoop refreshes the cache every CredentialsRefreshInterval.
func (a *Agent) usersLoop() { a.every(a.cfg.CredentialsRefreshInterval, a.refreshUsers) }

func (a *Agent) refreshUsers() {
	ctx, cancel := context.WithTimeout(context.Background(), max(a.cfg.CredentialsRefreshInterval, 5*time.Second))
	defer cancel()
	if err := a.users.Refresh(ctx, a.store); err != nil {
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
		created, err := a.store.UpsertScramCredential(ctx, b.User, users.Stored(b.Credential), true)
		if err != nil {
			return fmt.Errorf("--add-scram user %q: %w", b.User, err)
		}
		if created {
			a.logger.Info("SCRAM credential created", "user", b.User, "mechanism", b.Credential.Mechanism.Name())
		}
	}
	return a.users.Refresh(ctx, a.store)
}

// ScramCredential implements kafka.Users from the cache.
func (a *Agent) ScramCredential(user string, m *scram.Mechanism) (scram.Credential, bool) {
	return a.users.Credential(user, m)
}

// ScramUsers implements kafka.Users, reading the store.
func (a *Agent) ScramUsers(ctx context.Context) (map[string][]scram.Credential, error) {
	stored, err := a.store.Users(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]scram.Credential, len(stored))
	for _, u := range stored {
		creds, err := users.Credentials(metadata.UsersPrefix+u.Name, u)
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
	if _, err := a.store.UpsertScramCredential(ctx, user, users.Stored(c), false); err != nil {
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
