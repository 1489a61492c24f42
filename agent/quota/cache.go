package quota

// The agent's copy of the client quotas (docs/security.md "Quotas"): the
// entries live in the store, one object (metadata.QuotasKey); each agent
// enforces them from its copy (metadata.Cache), so a request never waits
// on the store. As with the ACLs (agent/acl), the copy is re-read on
// every pass of the agent's reconcile loop, at once when gossip says
// quotas changed, and right after this agent writes them; the agent reads
// it before it serves.

import (
	"context"
	"log/slog"

	"github.com/strata-streaming/strata/agent/metadata"
)

// Cache is the agent's side of kafka.Quotas: the copy, and the writes to
// the store's entries. Safe for concurrent use; ClientQuotas never
// blocks.
type Cache struct {
	store *metadata.Store
	cache metadata.Cache[metadata.Listed[*Set]]
}

// NewCache is a Cache of the quotas in store; announce tells the other
// agents that this one changed them. It holds none until Refresh.
func NewCache(store *metadata.Store, announce func() error, logger *slog.Logger) *Cache {
	return &Cache{store: store, cache: metadata.Cache[metadata.Listed[*Set]]{
		Read:     metadata.ReadListWith(store, metadata.QuotasKey, NewSet),
		Announce: announce, What: "client quotas", Logger: logger,
	}}
}

// Refresh replaces the copy with the store's, when it changed.
func (c *Cache) Refresh(ctx context.Context) error { return c.cache.Refresh(ctx) }

// ClientQuotas implements kafka.Quotas from the copy; nil before the
// first read.
func (c *Cache) ClientQuotas() *Set { return c.cache.Load().Value }

// AlterClientQuotas implements kafka.Quotas: one CAS write of the store's
// entries with alts applied; the copy is re-read and the other agents
// told.
func (c *Cache) AlterClientQuotas(ctx context.Context, alts []Alteration) error {
	_, err := metadata.UpdateList(ctx, c.store, metadata.QuotasKey, func(stored []Entry) ([]Entry, error) {
		return Apply(stored, alts), nil
	})
	if err != nil {
		return err
	}
	c.cache.Changed()
	return nil
}
