package agent

// Client quotas (docs/security.md "Quotas"): the agent's side of
// kafka.Quotas. The entries live in the store, one object
// (agent/metadata/quotas.go); each agent enforces them from an in-memory
// index behind an atomic pointer, so a request never waits on the store.
// As with the ACLs (acls.go), the copy is re-read on every pass of the
// reconcile loop, at once when gossip says quotas changed, and right
// after this agent writes them; New reads it before the agent serves.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/quota"
)

// quotasKey is the gossip broadcast key of quota changes; receivers
// re-read the whole object.
const quotasKey = "quotas"

// quotaCache is the agent's copy of the client quotas.
type quotaCache struct {
	set  atomic.Pointer[quota.Set] // replaced, never changed in place
	etag atomic.Pointer[string]
}

var _ kafka.Quotas = (*Agent)(nil)

// refreshQuotas replaces the copy with the store's, when it changed.
func (a *Agent) refreshQuotas(ctx context.Context) error {
	entries, etag, err := metadata.ReadList[quota.Entry](ctx, a.store, metadata.QuotasKey)
	if err != nil {
		return err
	}
	if old := a.quotas.etag.Load(); old != nil && *old == etag && etag != "" {
		return nil
	}
	a.quotas.set.Store(quota.NewSet(entries))
	a.quotas.etag.Store(&etag)
	a.logger.Debug("client quotas loaded", "entries", len(entries))
	return nil
}

// initQuotas reads the quotas once, before the agent serves, so that a
// client does not get past its quota because an agent just started. A
// failure is logged, not fatal: unlike the ACLs, quotas guard no data,
// and an agent that would not start over an unreadable quotas.json (one
// a newer version wrote, say) would take the cluster down with it; the
// reconcile loop retries.
func (a *Agent) initQuotas(ctx context.Context) {
	if err := a.refreshQuotas(ctx); err != nil {
		a.logger.Warn("read the client quotas; serving without them until a re-read succeeds", "err", err)
	}
}

// ClientQuotas implements kafka.Quotas from the in-memory copy.
func (a *Agent) ClientQuotas() *quota.Set { return a.quotas.set.Load() }

// AlterClientQuotas implements kafka.Quotas: one CAS write of the
// store's entries with alts applied, then the copy is re-read and the
// other agents are told.
func (a *Agent) AlterClientQuotas(ctx context.Context, alts []quota.Alteration) error {
	_, err := metadata.UpdateList(ctx, a.store, metadata.QuotasKey, func(stored []quota.Entry) ([]quota.Entry, error) {
		return quota.Apply(stored, alts), nil
	})
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.refreshQuotas(rctx); err != nil {
		a.logger.Warn("re-read client quotas after a change", "err", err)
	}
	if a.members != nil {
		if err := a.members.Broadcast(quotasKey, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
			a.logger.Warn("announce client quota change", "err", err)
		}
	}
	return nil
}
