package control

// Drain (docs/design.md §8): the agent announces itself as draining, hands the
// leadership of each partition it leads to another in-sync replica, and
// waits while the balancer moves its replicas to the active agents (a
// draining agent is not active, so placement takes every replica off it;
// the balancer does not wait for membership to settle while an agent
// drains). It ends when the agent holds no replica, when no active agent
// is left to take them, or at the time limit. SIGTERM drains for up to
// --drain-timeout before the agent stops (a Kubernetes preStop hook, or
// the SIGKILL that follows the grace period, must not find replicas that
// only this agent holds: those it seals and uploads first); POST
// /v1/drain (strata agent drain) drains and then stops the agent, and
// refuses what would leave partitions under-replicated unless forced.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/membership"

	"github.com/strata-streaming/strata/agent/placement"
)

// ErrNoDrainTarget: no active agent is left to take this agent's replicas.
var ErrNoDrainTarget = errors.New("agent: no active agent to drain to")

// Drain moves this agent's leaderships and replicas away and returns once
// it holds none, or with an error when it cannot (ErrNoDrainTarget) or ctx
// ends first.
func (c *Controller) Drain(ctx context.Context) error {
	if c.draining.CompareAndSwap(false, true) {
		c.announceDraining()
	}
	return c.waitDrained(ctx)
}

// SetMemberState announces this agent's state (joining, active,
// draining), logging a failure: gossip is a hint, and the others see the
// state at the next exchange.
func (c *Controller) SetMemberState(s membership.State) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.members.SetState(ctx, s); err != nil {
		c.logger.Warn("announce agent state", "state", s, "err", err)
	}
}

func (c *Controller) announceDraining() {
	c.logger.Info("draining: moving leaderships and replicas to other agents", "partitions", len(c.host.Partitions()))
	c.SetMemberState(membership.StateDraining)
}

func (c *Controller) waitDrained(ctx context.Context) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	began := time.Now()
	for {
		local := c.host.Partitions()
		if len(local) == 0 {
			c.logger.Info("drained: this agent holds no replica", "took", time.Since(began).Round(time.Millisecond))
			return nil
		}
		targets := c.ActiveAgents()
		if len(targets) == 0 {
			return fmt.Errorf("%w: %d replicas stay", ErrNoDrainTarget, len(local))
		}
		c.inParallel(len(local), func(i int) { c.handOverLeadership(ctx, local[i], targets) })
		select {
		case <-ctx.Done():
			return fmt.Errorf("drain: %d replicas left: %w", len(c.host.Partitions()), ctx.Err())
		case <-t.C:
		}
	}
}

// handOverLeadership makes another in-sync replica on an active agent the
// leader of p, if this agent leads it and one exists: it holds every
// committed record, so nothing acknowledged is lost, and producers hear
// NOT_LEADER_OR_FOLLOWER once.
func (c *Controller) handOverLeadership(ctx context.Context, p *partition.Partition, targets []placement.Agent) {
	st, _ := p.StateAndETag()
	if st.Leader != c.id {
		return
	}
	_, err := c.changeState(ctx, p.TopicID(), p.Index(), func(cur metadata.PartitionState) (metadata.PartitionState, error) {
		if cur.Leader != c.id {
			return cur, nil
		}
		for _, r := range cur.Replicas {
			if r != c.id && slices.Contains(cur.ISR, r) && slices.ContainsFunc(targets, func(t placement.Agent) bool { return t.ID == r }) {
				next := cur
				next.Leader, next.LeaderEpoch, next.StateEpoch = r, cur.LeaderEpoch+1, cur.StateEpoch+1
				return next, nil
			}
		}
		return cur, nil
	})
	if err != nil {
		c.logger.Warn("drain: hand over leadership", "topic", p.Topic(), "partition", p.Index(), "err", err)
	}
}

// defaultDrainTimeout bounds a requested drain when --drain-timeout is 0
// (which only turns draining on SIGTERM off).
const defaultDrainTimeout = 5 * time.Minute

// StartDrain starts a requested drain in the background. A second request
// while one runs changes nothing.
func (c *Controller) StartDrain(force bool, timeoutArg string) (int, error) {
	timeout := c.cfg.DrainTimeout
	if timeout <= 0 {
		timeout = defaultDrainTimeout
	}
	if timeoutArg != "" {
		d, err := time.ParseDuration(timeoutArg)
		if err != nil || d <= 0 {
			return http.StatusBadRequest, fmt.Errorf("drain: timeout %q: want a positive Go duration such as 90s", timeoutArg)
		}
		timeout = d
	}
	if c.draining.Load() {
		return http.StatusOK, nil
	}
	if !force {
		if err := c.drainBlocker(); err != nil {
			return http.StatusConflict, err
		}
	}
	// Two requests at once start one drain.
	if !c.draining.CompareAndSwap(false, true) {
		return http.StatusOK, nil
	}
	c.drainErr.Store(nil)
	c.announceDraining()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := c.waitDrained(ctx)
		cancel()
		if err != nil && !force {
			msg := fmt.Sprintf("drain did not finish, so the agent stays up and active: %v (drain with force to stop anyway)", err)
			c.logger.Warn(msg)
			c.drainErr.Store(&msg)
			c.draining.Store(false)
			c.SetMemberState(membership.StateActive)
			return
		}
		if err != nil {
			c.logger.Warn("drain did not finish; stopping anyway (forced)", "err", err)
			c.UploadSoleCopies()
		}
		c.host.StopAgent()
	}()
	return http.StatusOK, nil
}

// drainBlocker says why draining would leave a partition with fewer
// replicas than it has, if it would: placement keeps a partition on as
// many active agents as there are, at most its replication factor.
func (c *Controller) drainBlocker() error {
	others := 0
	for _, t := range c.ActiveAgents() {
		if t.ID != c.id {
			others++
		}
	}
	for _, p := range c.host.Partitions() {
		if rf := len(p.Replicas()); rf > others {
			return fmt.Errorf("drain: %s-%d has %d replicas and only %d other agents are active, so it would be left under-replicated; add an agent, or drain with force", p.Topic(), p.Index(), rf, others)
		}
	}
	return nil
}

// UploadSoleCopies seals and uploads every tiered partition that this
// agent leads with no other replica in sync, so that a forced stop leaves
// its latest records in the bucket and not only on this disk.
func (c *Controller) UploadSoleCopies() {
	sealed := 0
	for _, p := range c.host.Partitions() {
		st, _ := p.StateAndETag()
		if st.Leader != c.id || p.Remote() == nil || slices.ContainsFunc(st.ISR, func(r int32) bool { return r != c.id }) {
			continue
		}
		if err := p.LocalLog().Roll(); err != nil {
			c.logger.Warn("seal the only copy before stopping", "topic", p.Topic(), "partition", p.Index(), "err", err)
			continue
		}
		sealed++
	}
	if sealed == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.host.UploadTiered(ctx)
	c.logger.Info("uploaded the partitions only this agent held", "partitions", sealed)
}
