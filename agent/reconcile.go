package agent

// Topics changed by other agents (docs/design.md §8: gossip is a hint, the
// store is the truth). An agent that creates, deletes or changes a topic
// broadcasts "topics changed" (topicsKey); every agent then re-reads the
// topics from the store (topics.Table.Reconcile), and does so anyway every
// --reconcile-interval, which repairs any broadcast gossip lost. The same
// loop re-reads the ACLs and the client quotas.

import (
	"context"
	"time"

	"github.com/strata-streaming/strata/membership"
)

// topicsKey is the broadcast key of topic changes; a newer broadcast
// replaces a queued one, since receivers re-read everything anyway.
const topicsKey = "topics"

// reconcileLoop re-reads the topics, the ACLs (agent/acl) and the client
// quotas (agent/quota) every interval and when woken.
func (a *Agent) reconcileLoop() {
	t := time.NewTicker(a.cfg.ReconcileInterval)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			return
		case <-t.C:
		case <-a.reconcileNow:
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ReconcileInterval)
		if err := a.topics.Reconcile(ctx); err != nil {
			a.logger.Warn("reconcile topics with the store", "err", err)
		}
		if err := a.acls.Refresh(ctx); err != nil {
			a.logger.Warn("re-read ACLs from the store", "err", err)
		}
		if err := a.quotas.Refresh(ctx); err != nil {
			a.logger.Warn("re-read client quotas from the store", "err", err)
		}
		cancel()
	}
}

// wakeReconcile asks for a reconcile soon; wakes coalesce.
func (a *Agent) wakeReconcile() {
	select {
	case a.reconcileNow <- struct{}{}:
	default:
	}
}

// onMemberEvent reacts to gossip beyond logging.
func (a *Agent) onMemberEvent(e membership.Event) {
	switch {
	case e.Type == membership.EventBroadcast && (e.Key == topicsKey || e.Key == aclsKey || e.Key == quotasKey):
		a.wakeReconcile()
	case e.Type == membership.EventBroadcast:
		a.ctl.OnBroadcast(e)
	case e.Type == membership.EventFail, e.Type == membership.EventLeave:
		// Its pooled connections are dead or about to be; a return
		// dials afresh.
		a.peers.Forget(e.Member.ID)
		a.ctl.MemberChanged(time.Now())
	case e.Type == membership.EventJoin:
		a.ctl.MemberJoined(e.Member.ID)
		a.ctl.MemberChanged(time.Now())
	case e.Type == membership.EventUpdate:
		a.ctl.MemberChanged(time.Now())
	}
}
