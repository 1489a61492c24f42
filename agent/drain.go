package agent

// Drain (DESIGN.md §8): the agent announces itself as draining, hands the
// leadership of each partition it leads to another in-sync replica, and
// waits while the balancer moves its replicas to the active agents (a
// draining agent is not active, so placement takes every replica off it;
// the balancer does not wait for membership to settle while an agent
// drains). It ends when the agent holds no replica, when no active agent
// is left to take them, or at the time limit. SIGTERM drains for up to
// --drain-timeout before the agent stops; POST /v1/drain (strata agent
// drain) drains and then stops the agent.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/membership"
)

// ErrNoDrainTarget: no active agent is left to take this agent's replicas.
var ErrNoDrainTarget = errors.New("agent: no active agent to drain to")

// Drain moves this agent's leaderships and replicas away and returns once
// it holds none, or with an error when it cannot (ErrNoDrainTarget) or ctx
// ends first.
func (a *Agent) Drain(ctx context.Context) error {
	if !a.draining.CompareAndSwap(false, true) {
		return a.waitDrained(ctx)
	}
	a.logger.Info("draining: moving leaderships and replicas to other agents", "partitions", len(a.localPartitions()))
	a.setMemberState(membership.StateDraining)
	return a.waitDrained(ctx)
}

func (a *Agent) waitDrained(ctx context.Context) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	began := time.Now()
	for {
		local := a.localPartitions()
		if len(local) == 0 {
			a.logger.Info("drained: this agent holds no replica", "took", time.Since(began).Round(time.Millisecond))
			return nil
		}
		targets := a.activeAgents()
		if len(targets) == 0 {
			return fmt.Errorf("%w: %d replicas stay", ErrNoDrainTarget, len(local))
		}
		for _, p := range local {
			a.handOverLeadership(ctx, p, targets)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain: %d replicas left: %w", len(a.localPartitions()), ctx.Err())
		case <-t.C:
		}
	}
}

// handOverLeadership makes another in-sync replica on an active agent the
// leader of p, if this agent leads it and one exists: it holds every
// committed record, so nothing acknowledged is lost, and producers hear
// NOT_LEADER_OR_FOLLOWER once.
func (a *Agent) handOverLeadership(ctx context.Context, p *partition, targets []membership.PlacementAgent) {
	st, _ := p.stateAndETag()
	if st.Leader != a.id {
		return
	}
	_, err := a.changeState(ctx, p.topicID, p.index, func(cur metadata.PartitionState) (metadata.PartitionState, error) {
		if cur.Leader != a.id {
			return cur, nil
		}
		for _, r := range cur.Replicas {
			if r != a.id && slices.Contains(cur.ISR, r) && slices.ContainsFunc(targets, func(t membership.PlacementAgent) bool { return t.ID == r }) {
				next := cur
				next.Leader, next.LeaderEpoch, next.StateEpoch = r, cur.LeaderEpoch+1, cur.StateEpoch+1
				return next, nil
			}
		}
		return cur, nil
	})
	if err != nil {
		a.logger.Warn("drain: hand over leadership", "topic", p.topic, "partition", p.index, "err", err)
	}
}

// drainHandler serves POST /v1/drain: drain, then stop the agent. It
// answers at once; GET /v1/drain reports progress.
func (a *Agent) drainHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && !a.draining.Load() {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.DrainTimeout)
			err := a.Drain(ctx)
			cancel()
			if err != nil {
				a.logger.Warn("drain ended early; stopping anyway", "err", err)
			}
			a.Close()
		}()
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, "{\"agent_id\":%d,\"draining\":%t,\"replicas\":%d}\n", a.id, a.draining.Load(), len(a.localPartitions()))
}
