package kafka

import "sync"

// ReplicaLinks is the backend family that hears when a follower agent has
// no connection left to this agent that carries its replica fetches (its
// process most likely died: its kernel closed its sockets), and when it
// has one again; and that may know an agent gossip still lists to be
// dead (the controller, agent/control/deaths.go). Left unset, nothing
// hears, and Metadata goes by Brokers alone.
type ReplicaLinks interface {
	FollowerLinkLost(replicaID int32)
	FollowerLinked(replicaID int32)
	// SeemsDead reports whether agent id most likely died a moment ago;
	// Metadata names other agents for the diskless partitions
	// (disklessmeta.go).
	SeemsDead(id int32) bool
}

// replicaLinks counts, per follower agent, the open connections that
// have carried its replica fetches. A follower may hold more than one
// for a moment (a new one dialled before the old one's close is seen),
// so only the last close counts, and only the first open.
type replicaLinks struct {
	mu   sync.Mutex
	open map[int32]int
}

// fetched marks conn as carrying replicaID's fetches, once per
// connection (a connection carries one agent's), and reports whether it
// is the agent's only one.
func (l *replicaLinks) fetched(conn *connState, replicaID int32) bool {
	if conn == nil || conn.replicaLink {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open == nil {
		l.open = map[int32]int{}
	}
	l.open[replicaID]++
	conn.replicaLink, conn.replicaID = true, replicaID
	return l.open[replicaID] == 1
}

// closed unmarks a closing connection and reports whether it was its
// follower's last.
func (l *replicaLinks) closed(conn *connState) (int32, bool) {
	if !conn.replicaLink {
		return -1, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open[conn.replicaID]--
	if l.open[conn.replicaID] > 0 {
		return conn.replicaID, false
	}
	delete(l.open, conn.replicaID)
	return conn.replicaID, true
}

// replicaFetched tells ReplicaLinks when conn is a follower's first.
func (s *Server) replicaFetched(conn *connState, replicaID int32) {
	if !s.links.fetched(conn, replicaID) {
		return
	}
	s.followers.FollowerLinked(replicaID)
}

// replicaConnClosed tells ReplicaLinks when a closing connection was a
// follower's last.
func (s *Server) replicaConnClosed(conn *connState) {
	id, last := s.links.closed(conn)
	if !last {
		return
	}
	s.followers.FollowerLinkLost(id)
}

// alive is brokers without the agents that seem dead (ReplicaLinks);
// brokers itself when that would leave none.
func (s *Server) alive(brokers []Broker) []Broker {
	var out []Broker
	for _, b := range brokers {
		if !s.followers.SeemsDead(b.ID) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return brokers
	}
	return out
}
