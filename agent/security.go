package agent

// The security state every request consults (docs/security.md): SCRAM
// users (agent/users), ACLs (agent/acl) and client quotas (agent/quota).
// Each is a copy of what the store keeps (metadata.Cache), read before
// the agent serves and kept current by the reconcile loop (the ACLs and
// quotas, also woken by gossip: aclsKey, quotasKey) or usersLoop.

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/quota"
	"github.com/strata-streaming/strata/agent/users"
	"github.com/strata-streaming/strata/internal/scram"
)

// Authorizer names, as --authorizer takes them.
const (
	authorizerNone = ""
	authorizerACL  = "acl"
)

// The gossip broadcast keys of ACL and quota changes; receivers re-read
// the whole object, so a newer broadcast replaces a queued one.
const (
	aclsKey   = "acls"
	quotasKey = "quotas"
)

// openSecurity creates the --add-scram users and reads the users, the
// ACLs and the quotas. Unreadable ACLs stop the start (an empty copy
// might allow what the ACLs deny); unreadable quotas do not: they guard
// no data, and an agent that would not start over an unreadable
// quotas.json (one a newer version wrote, say) would take the cluster
// down with it. The reconcile loop retries.
func (a *Agent) openSecurity(ctx context.Context) error {
	a.users = users.New(a.store, a.logger)
	specs := make([]scram.Bootstrap, 0, len(a.cfg.AddScram))
	for _, spec := range a.cfg.AddScram {
		b, err := scram.ParseBootstrap(spec)
		if err != nil {
			return fmt.Errorf("--add-scram: %w", err) // checked by Validate; the salt is random
		}
		specs = append(specs, b)
	}
	err := a.users.Bootstrap(ctx, specs, func(user, mechanism string) {
		a.logger.Info("SCRAM credential created", "user", user, "mechanism", mechanism)
	})
	if err != nil {
		return err
	}
	if a.cfg.Authorizer == authorizerACL {
		supers, _ := acl.ParseSuperUsers(a.cfg.SuperUsers) // checked by Validate
		policy := acl.Policy{SuperUsers: supers, AllowIfNoACL: a.cfg.AllowEveryoneIfNoACLFound}
		a.acls = acl.NewAuthorizer(a.store, policy, a.announcer(aclsKey), a.logger)
		if err := a.acls.Load(ctx); err != nil {
			return err
		}
	}
	a.quotas = quota.NewCache(a.store, a.announcer(quotasKey), a.logger)
	if err := a.quotas.Refresh(ctx); err != nil {
		a.logger.Warn("read the client quotas; serving without them until a re-read succeeds", "err", err)
	}
	return nil
}

// announcer tells the other agents, by gossip under key, that this one
// changed what they cache.
func (a *Agent) announcer(key string) func() error {
	return func() error {
		if a.members == nil {
			return nil
		}
		return a.members.Broadcast(key, []byte(time.Now().UTC().Format(time.RFC3339Nano)))
	}
}

// usersLoop refreshes the SCRAM users every --credentials-refresh-interval,
// so a change made on another agent reaches this one within an interval.
func (a *Agent) usersLoop() {
	a.every(a.cfg.CredentialsRefreshInterval, func() {
		ctx, cancel := context.WithTimeout(context.Background(), max(a.cfg.CredentialsRefreshInterval, 5*time.Second))
		defer cancel()
		if err := a.users.Refresh(ctx); err != nil {
			a.logger.Warn("refresh SCRAM credentials from the store", "err", err)
		}
	})
}
