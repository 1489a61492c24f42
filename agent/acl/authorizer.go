package acl

// The agent's authorizer (--authorizer acl, docs/security.md
// "Authorization"): the entries live in the store, one object
// (metadata.ACLsKey); each agent decides from its copy (metadata.Cache),
// so a request never waits on the store. The copy is re-read on every
// pass of the agent's reconcile loop (every --reconcile-interval, and at
// once when gossip says ACLs changed), and right after this agent writes
// them. A change made through any agent therefore applies on every agent
// within one interval, and within a gossip round trip when the broadcast
// arrives.
//
// The copy starts empty and is read before the agent serves: with
// --allow-everyone-if-no-acl-found an empty copy would open every
// resource, so Load fails, and the agent with it, rather than serve
// before it has read the ACLs.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

// Authorizer is the agent's copy of the ACLs, the decisions made from
// it, and the writes to the store's. A nil *Authorizer is disabled: it
// allows everything, as Kafka does without an authorizer. Its methods
// are safe for concurrent use; Authorize and AuthorizeAny never block.
type Authorizer struct {
	policy Policy
	store  *metadata.Store
	cache  metadata.Cache[metadata.Listed[[]Entry]]
}

// ErrDisabled guards the write paths of a disabled Authorizer; the
// Kafka handlers answer SECURITY_DISABLED before reaching them.
var ErrDisabled = errors.New("acl: no authorizer is configured (--authorizer)")

// NewAuthorizer is an Authorizer of the ACLs in store, deciding by
// policy; announce tells the other agents that this one changed them.
// It holds no entries until Load.
func NewAuthorizer(store *metadata.Store, policy Policy, announce func() error, logger *slog.Logger) *Authorizer {
	a := &Authorizer{policy: policy, store: store}
	a.cache = metadata.Cache[metadata.Listed[[]Entry]]{
		Read: metadata.ReadListWith(store, metadata.ACLsKey, func(e []Entry) []Entry {
			if e == nil {
				e = []Entry{}
			}
			return e
		}),
		Announce: announce, What: "ACLs", Logger: logger,
	}
	return a
}

// ParseSuperUsers splits Kafka's super.users form, "User:a;User:b".
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, _, err := ParsePrincipal(p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Load reads the ACLs for the first time, before the agent serves.
func (a *Authorizer) Load(ctx context.Context) error {
	if err := a.Refresh(ctx); err != nil {
		return fmt.Errorf("--authorizer acl: read the ACLs: %w", err)
	}
	return nil
}

// Refresh replaces the copy with the store's, when it changed.
func (a *Authorizer) Refresh(ctx context.Context) error {
	if a == nil {
		return nil
	}
	return a.cache.Refresh(ctx)
}

func (a *Authorizer) entries() []Entry { return a.cache.Load().Value }

// AuthorizerEnabled implements kafka.Authorizer.
func (a *Authorizer) AuthorizerEnabled() bool { return a != nil }

// Authorize implements kafka.Authorizer from the copy.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	if a == nil {
		return true
	}
	return Authorize(a.policy, a.entries(), Request{Principal: principal, Host: host}, op, typ, name)
}

// AuthorizeAny implements kafka.Authorizer from the copy.
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	if a == nil {
		return true
	}
	return AuthorizeAny(a.policy, a.entries(), Request{Principal: principal, Host: host}, op, typ)
}

// DescribeACLs implements kafka.Authorizer from the copy.
func (a *Authorizer) DescribeACLs(f Filter) []Entry {
	if a == nil {
		return nil
	}
	var out []Entry
	for _, e := range a.entries() {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	return out
}

// CreateACLs implements kafka.Authorizer: one CAS write of the store's
// entries plus those not already there.
func (a *Authorizer) CreateACLs(ctx context.Context, entries []Entry) error {
	if a == nil {
		return ErrDisabled
	}
	_, err := metadata.UpdateList(ctx, a.store, metadata.ACLsKey, func(stored []Entry) ([]Entry, error) {
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
	a.cache.Changed()
	return nil
}

// DeleteACLs implements kafka.Authorizer: one CAS write without every
// entry a filter selects.
func (a *Authorizer) DeleteACLs(ctx context.Context, filters []Filter) ([][]Entry, error) {
	if a == nil {
		return nil, ErrDisabled
	}
	var deleted [][]Entry
	_, err := metadata.UpdateList(ctx, a.store, metadata.ACLsKey, func(stored []Entry) ([]Entry, error) {
		deleted = make([][]Entry, len(filters)) // fn may run again on a CAS conflict
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
	a.cache.Changed()
	return deleted, nil
}
