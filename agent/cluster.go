package agent

// Membership wiring (docs/design.md §8): the agent gossips its id, Kafka and
// HTTP addresses, rack and state, and lists the live agents it hears of in
// Metadata and DescribeCluster. New topics place their replicas on the
// live agents (agent/placement); replication is agent/partition's, and
// election agent/control's.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/listener"
	"github.com/strata-streaming/strata/agent/placement"
	"github.com/strata-streaming/strata/membership"
)

// startMembership joins the gossip cluster as a joining member.
func (a *Agent) startMembership() error {
	cfg := a.cfg.Gossip
	cfg.Logger = a.logger
	// Agents of another cluster (another store) are never merged in.
	cfg.Label = "strata/" + a.clusterID
	m, err := membership.Start(cfg, membership.Member{ID: a.id, KafkaAddr: a.advertisedAddr(),
		HTTPAddr: a.HTTPAddr().String(), Rack: a.cfg.Rack, State: membership.StateJoining, Listeners: a.cfg.MemberListeners(a.listeners)})
	if err != nil {
		return err
	}
	if holder, held := m.IDHeldBy(); held {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m.Leave(ctx)
		m.Close()
		return fmt.Errorf("%s: agent id %d is held by the live agent %s (gossip %s, Kafka %s); two agents cannot share an id: stop that one, or give this one another id",
			a.cfg.idFlag(), a.id, holder.Name, holder.GossipAddr, holder.KafkaAddr)
	}
	a.members = m
	return nil
}

// alone reports whether gossip shows no live agent but this one.
func (a *Agent) alone() bool {
	if a.members == nil {
		return true
	}
	for _, m := range a.members.Members() {
		if m.ID != a.id {
			return false
		}
	}
	return true
}

// watchMembers logs who joins, leaves or fails until the events end.
func (a *Agent) watchMembers() {
	for e := range a.members.Events() {
		a.onMemberEvent(e)
		switch e.Type {
		case membership.EventJoin, membership.EventLeave, membership.EventFail:
			a.logger.Info("agent membership", "event", e.Type, "agent_id", e.Member.ID, "kafka_addr", e.Member.KafkaAddr, "state", e.Member.State)
		case membership.EventDuplicate:
			if !e.Restarted() { // a restart is expected and logged by membership
				a.logger.Error("two live agents claim one agent id", "agent_id", e.Member.ID, "node", e.Member.Name, "other", e.Other.Name)
			}
		}
	}
}

// leaveMembership leaves gracefully, so the others see a leave at once
// rather than a failure after the detection timeout.
func (a *Agent) leaveMembership() {
	if a.members == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.members.Leave(ctx); err != nil {
		a.logger.Warn("leave the gossip cluster", "err", err)
	}
	a.members.Close()
}

// Brokers implements kafka.Cluster: this agent and every live agent it
// hears of by gossip, once per id (the newest incarnation).
func (a *Agent) Brokers() []kafka.Broker {
	out := []kafka.Broker{a.self()}
	if a.members == nil {
		return out
	}
	seen := map[int32]bool{a.id: true}
	for _, m := range a.members.Members() {
		if seen[m.ID] {
			continue
		}
		host, port, err := net.SplitHostPort(m.KafkaAddr)
		p, perr := strconv.Atoi(port)
		if err != nil || perr != nil {
			continue
		}
		seen[m.ID] = true
		b := kafka.Broker{ID: m.ID, Host: host, Port: int32(p), Endpoints: listener.ParseEndpoints(m.Listeners)}
		if m.Rack != "" {
			rack := m.Rack
			b.Rack = &rack
		}
		out = append(out, b)
	}
	return out
}

func (a *Agent) self() kafka.Broker {
	b := kafka.Broker{ID: a.id, Host: a.advertised.Host, Port: a.advertised.Port, Endpoints: listener.ParseEndpoints(a.cfg.MemberListeners(a.listeners))}
	if a.cfg.Rack != "" {
		rack := a.cfg.Rack
		b.Rack = &rack
	}
	return b
}

// placementAgents are the agents new replicas go on: the live ones, each
// once, in rack-alternating order (placement.Order).
func (a *Agent) placementAgents() []int32 {
	var agents []placement.Agent
	for _, b := range a.Brokers() {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		agents = append(agents, placement.Agent{ID: b.ID, Rack: rack})
	}
	return placement.Order(agents)
}
