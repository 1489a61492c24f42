package agent

// Kafka ACLs (--authorizer acl, docs/security.md "Authorization"): the
// agent's side of kafka.Authorizer. The entries live in the store, one
// object (agent/metadata/acls.go); each agent decides from an in-memory
// copy behind an atomic pointer, so a request never waits on the store.
// The copy is re-read on every pass of the reconcile loop (every
// --reconcile-interval, and at once when gossip says ACLs changed), and
// right after this agent writes them. A change made through any agent
// therefore applies on every agent within one interval, and within a
// gossip round trip when the broadcast arrives.
//
// The copy starts empty and is read before the agent serves: with
// --allow-everyone-if-no-acl-found an empty copy would open every
// resource, so New fails rather than serve before it has read the ACLs.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/metadata"
)

// Authorizer names, as --authorizer takes them.
const (
	authorizerNone = ""
	authorizerACL  = "acl"
)

// aclsKey is the gossip broadcast key of ACL changes; receivers re-read
// the whole object, so a newer broadcast replaces a queued one.
const aclsKey = "acls"

// aclCache is the agent's copy of the ACLs and its decision policy.
type aclCache struct {
	enabled bool
	policy  acl.Policy
	// entries is the last copy read; never nil once loaded. The slice is
	// replaced, never changed in place.
	entries atomic.Pointer[[]acl.Entry]
	etag    atomic.Pointer[string]
}

var _ kafka.Authorizer = (*Agent)(nil)

// parseSuperUsers splits --super-users, Kafka's super.users form
// "User:a;User:b".
func parseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, _, err := acl.ParsePrincipal(p); err != nil {
			return nil, fmt.Errorf("--super-users: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// initACLs sets the policy from the config and reads the entries once.
func (a *Agent) initACLs(ctx context.Context) error {
	empty := []acl.Entry{}
	a.acls.entries.Store(&empty)
	if a.cfg.Authorizer != authorizerACL {
		return nil
	}
	supers, err := parseSuperUsers(a.cfg.SuperUsers)
	if err != nil {
		return err
	}
	a.acls.enabled = true
	a.acls.policy = acl.Policy{SuperUsers: supers, AllowIfNoACL: a.cfg.AllowEveryoneIfNoACLFound}
	if err := a.refreshACLs(ctx); err != nil {
		return fmt.Errorf("--authorizer acl: read the ACLs: %w", err)
	}
	return nil
}

// refreshACLs replaces the copy with the store's, when it changed.
func (a *Agent) refreshACLs(ctx context.Context) error {
	if !a.acls.enabled {
		return nil
	}
	entries, etag, err := metadata.ReadList[acl.Entry](ctx, a.store, metadata.ACLsKey)
	if err != nil {
		return err
	}
	if old := a.acls.etag.Load(); old != nil && *old == etag && etag != "" {
		return nil
	}
	if entries == nil {
		entries = []acl.Entry{}
	}
	a.acls.entries.Store(&entries)
	a.acls.etag.Store(&etag)
	a.logger.Debug("ACLs loaded", "entries", len(entries))
	return nil
}

// aclsChanged is called after this agent wrote the ACLs: it reads them
// back at once and tells the other agents to.
func (a *Agent) aclsChanged() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.refreshACLs(ctx); err != nil {
		a.logger.Warn("re-read ACLs after a change", "err", err)
	}
	if a.members == nil {
		return
	}
	if err := a.members.Broadcast(aclsKey, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		a.logger.Warn("announce ACL change", "err", err)
	}
}

func (a *Agent) aclEntries() []acl.Entry { return *a.acls.entries.Load() }

// AuthorizerEnabled implements kafka.Authorizer.
func (a *Agent) AuthorizerEnabled() bool { return a.acls.enabled }

// Authorize implements kafka.Authorizer from the in-memory copy.
func (a *Agent) Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return acl.Authorize(a.acls.policy, a.aclEntries(), acl.Request{Principal: principal, Host: host}, op, typ, name)
}

// AuthorizeAny implements kafka.Authorizer from the in-memory copy.
func (a *Agent) AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	return acl.AuthorizeAny(a.acls.policy, a.aclEntries(), acl.Request{Principal: principal, Host: host}, op, typ)
}

// DescribeACLs implements kafka.Authorizer from the in-memory copy.
func (a *Agent) DescribeACLs(f acl.Filter) []acl.Entry {
	var out []acl.Entry
	for _, e := range a.aclEntries() {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	return out
}

// errAuthorizerDisabled guards the write paths; the handlers answer
// SECURITY_DISABLED before reaching them.
var errAuthorizerDisabled = errors.New("agent: no authorizer is configured (--authorizer)")

// CreateACLs implements kafka.Authorizer: one CAS write of the store's
// entries plus those not already there.
func (a *Agent) CreateACLs(ctx context.Context, entries []acl.Entry) error {
	if !a.acls.enabled {
		return errAuthorizerDisabled
	}
	_, err := metadata.UpdateList(ctx, a.store, metadata.ACLsKey, func(stored []acl.Entry) ([]acl.Entry, error) {
		for _, e := range entries {
			if !slices.Contains(stored, e) {
				stored = append(stored, e)
			}
		}
		return stored, nil
	})
	if err != nil {
		return err
	}
	a.aclsChanged()
	return nil
}

// DeleteACLs implements kafka.Authorizer: one CAS write without every
// entry a filter selects.
func (a *Agent) DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.Entry, error) {
	if !a.acls.enabled {
		return nil, errAuthorizerDisabled
	}
	var deleted [][]acl.Entry
	_, err := metadata.UpdateList(ctx, a.store, metadata.ACLsKey, func(stored []acl.Entry) ([]acl.Entry, error) {
		deleted = make([][]acl.Entry, len(filters)) // fn may run again on a CAS conflict
		kept := stored[:0:0]
		for _, e := range stored {
			hit := false
			for i, f := range filters {
				if f.Matches(e) {
					deleted[i] = append(deleted[i], e)
					hit = true
				}
			}
			if !hit {
				kept = append(kept, e)
			}
		}
		return kept, nil
	})
	if err != nil {
		return nil, err
	}
	a.aclsChanged()
	return deleted, nil
}
