package agent

// Drain (DESIGN.md §8): the agent announces itself as draining, hands the
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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
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
	if a.draining.CompareAndSwap(false, true) {
		a.announceDraining()
	}
	return a.waitDrained(ctx)
}

// logDrainEnd logs why the drain before stopping ended early: at info for
// a lone agent, which had nowhere to drain to and stops as it would
// without a drain, and as a warning otherwise (the other agents are all
// draining or joining, or time ran out), when replicas stay that others
// were meant to take.
func (a *Agent) logDrainEnd(err error) {
	if errors.Is(err, ErrNoDrainTarget) && a.alone() {
		a.logger.Info("no other agent to drain to; stopping with the replicas here",
			"replicas", len(a.localPartitions()))
		return
	}
	a.logger.Warn("drain before stopping ended early", "err", err)
}

// alone reports whether gossip shows no live agent but this one.
func (a *Agent) alone() bool {
	for _, m := range a.members.Members() {
		if m.ID != a.id {
			return false
		}
	}
	return true
}

func (a *Agent) announceDraining() {
	a.logger.Info("draining: moving leaderships and replicas to other agents", "partitions", len(a.localPartitions()))
	a.setMemberState(membership.StateDraining)
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

// drainHandler serves /v1/drain:
//
//	POST  drain this agent, then stop it. Without force=true the drain is
//	      refused (409) when the other active agents are too few to hold
//	      each partition's replicas, and a drain that does not finish in
//	      time leaves the agent running and active again; with force=true
//	      the agent stops at the time limit whatever is left, after sealing
//	      and uploading what only it holds. timeout= (a Go duration) is
//	      the limit, default --drain-timeout, or 5 minutes when that is 0.
//	GET   progress: {"agent_id", "draining", "replicas", "error"}.
//
// agent=ID sends either on to that agent (found by gossip), so one
// agent's address serves for the whole cluster.
func (a *Agent) drainHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if id := q.Get("agent"); id != "" {
		a.forwardDrain(w, r, id)
		return
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPost:
		if status, err := a.startDrain(q.Get("force") == "true", q.Get("timeout")); err != nil {
			writeDrainJSON(w, status, map[string]any{"agent_id": a.id, "error": err.Error()})
			return
		}
	default:
		writeDrainJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": "use GET or POST"})
		return
	}
	out := map[string]any{"agent_id": a.id, "draining": a.draining.Load(), "replicas": len(a.localPartitions())}
	if e := a.drainErr.Load(); e != nil {
		out["error"] = *e
	}
	writeDrainJSON(w, http.StatusOK, out)
}

// defaultDrainTimeout bounds a requested drain when --drain-timeout is 0
// (which only turns draining on SIGTERM off).
const defaultDrainTimeout = 5 * time.Minute

// startDrain starts a requested drain in the background. A second request
// while one runs changes nothing.
func (a *Agent) startDrain(force bool, timeoutArg string) (int, error) {
	timeout := a.cfg.DrainTimeout
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
	if a.draining.Load() {
		return http.StatusOK, nil
	}
	if !force {
		if err := a.drainBlocker(); err != nil {
			return http.StatusConflict, err
		}
	}
	// Two requests at once start one drain.
	if !a.draining.CompareAndSwap(false, true) {
		return http.StatusOK, nil
	}
	a.drainErr.Store(nil)
	a.announceDraining()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := a.waitDrained(ctx)
		cancel()
		if err != nil && !force {
			msg := fmt.Sprintf("drain did not finish, so the agent stays up and active: %v (drain with force to stop anyway)", err)
			a.logger.Warn(msg)
			a.drainErr.Store(&msg)
			a.draining.Store(false)
			a.setMemberState(membership.StateActive)
			return
		}
		if err != nil {
			a.logger.Warn("drain did not finish; stopping anyway (forced)", "err", err)
			a.uploadSoleCopies()
		}
		a.Close()
	}()
	return http.StatusOK, nil
}

// drainBlocker says why draining would leave a partition with fewer
// replicas than it has, if it would: placement keeps a partition on as
// many active agents as there are, at most its replication factor.
func (a *Agent) drainBlocker() error {
	others := 0
	for _, t := range a.activeAgents() {
		if t.ID != a.id {
			others++
		}
	}
	for _, p := range a.localPartitions() {
		if rf := len(p.Replicas()); rf > others {
			return fmt.Errorf("drain: %s-%d has %d replicas and only %d other agents are active, so it would be left under-replicated; add an agent, or drain with force", p.topic, p.index, rf, others)
		}
	}
	return nil
}

// uploadSoleCopies seals and uploads every tiered partition that this
// agent leads with no other replica in sync, so that a forced stop leaves
// its latest records in the bucket and not only on this disk.
func (a *Agent) uploadSoleCopies() {
	sealed := 0
	for _, p := range a.localPartitions() {
		st, _ := p.stateAndETag()
		if st.Leader != a.id || p.remote.Load() == nil || slices.ContainsFunc(st.ISR, func(r int32) bool { return r != a.id }) {
			continue
		}
		if err := p.log.Roll(); err != nil {
			a.logger.Warn("seal the only copy before stopping", "topic", p.topic, "partition", p.index, "err", err)
			continue
		}
		sealed++
	}
	if sealed == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.tier.UploadOnce(ctx)
	a.logger.Info("uploaded the partitions only this agent held", "partitions", sealed)
}

// forwardDrain passes a drain request on to agent id's HTTP address.
func (a *Agent) forwardDrain(w http.ResponseWriter, r *http.Request, id string) {
	n, err := strconv.ParseInt(id, 10, 32)
	if err != nil {
		writeDrainJSON(w, http.StatusBadRequest, map[string]any{"error": fmt.Sprintf("drain: agent %q: want an agent id", id)})
		return
	}
	if int32(n) == a.id {
		q := r.URL.Query()
		q.Del("agent")
		r.URL.RawQuery = q.Encode()
		a.drainHandler(w, r)
		return
	}
	addr := ""
	for _, m := range a.members.Members() {
		if m.ID == int32(n) {
			addr = m.HTTPAddr
		}
	}
	if addr == "" {
		writeDrainJSON(w, http.StatusNotFound, map[string]any{"agent_id": n, "error": fmt.Sprintf("drain: agent %d is not a live member of the cluster", n)})
		return
	}
	q := r.URL.Query()
	q.Del("agent")
	req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+addr+"/v1/drain?"+q.Encode(), nil)
	if err == nil {
		var resp *http.Response
		if resp, err = drainClient.Do(req); err == nil {
			defer resp.Body.Close()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
			return
		}
	}
	writeDrainJSON(w, http.StatusBadGateway, map[string]any{"agent_id": n, "error": fmt.Sprintf("drain: agent %d at %s: %v", n, addr, err)})
}

var drainClient = &http.Client{Timeout: 10 * time.Second}

func writeDrainJSON(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
