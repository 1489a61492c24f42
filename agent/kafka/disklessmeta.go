package kafka

// The leader Metadata names for a diskless partition (docs/design.md
// §7a, Metadata and racks). Every agent serves every diskless partition,
// so the choice is only where the client should go: an agent of the
// client's own rack (availability zone), so that its produce and fetch
// traffic stays in the zone, picked by rendezvous hashing
// (diskless.Pick) so that partitions spread over the rack's agents and
// every agent answers alike. Kafka's Metadata request carries no rack,
// so the client's is, in order: a `strata_rack=R` token in its client
// id; the client.rack of the connection's last Fetch (v11+); this
// agent's own rack (right when clients reach agents through per-zone
// bootstrap addresses). Without racks, or with no live agent in the
// client's, the pick is over every live agent. "Live" leaves out an
// agent whose last replica fetch connection here closed a moment ago
// (replicalinks.go): its process most likely died, and gossip will say
// so only seconds later, while a client sent there waits for its next
// metadata refresh.

import (
	"strings"

	"github.com/strata-streaming/strata/agent/diskless"
)

// rackToken is the client id token that names the client's rack.
const rackToken = "strata_rack="

// clientRack is the rack of the client of r (file comment), "" if none
// is known.
func (s *Server) clientRack(r *request, brokers []Broker) string {
	if r.clientID != nil {
		if i := strings.Index(*r.clientID, rackToken); i >= 0 {
			v := (*r.clientID)[i+len(rackToken):]
			if j := strings.IndexAny(v, ",; "); j >= 0 {
				v = v[:j]
			}
			if v != "" {
				return v
			}
		}
	}
	if r.conn != nil && r.conn.rack != "" {
		return r.conn.rack
	}
	self := s.cluster.AgentID()
	for _, b := range brokers {
		if b.ID == self && b.Rack != nil {
			return *b.Rack
		}
	}
	return ""
}

// disklessPicker returns the pick over the live agents of rack, or over
// all of them when rack is "" or has none.
func disklessPicker(brokers []Broker, rack string) func([16]byte, int32) int32 {
	var inRack, all []int32
	for _, b := range brokers {
		all = append(all, b.ID)
		if rack != "" && b.Rack != nil && *b.Rack == rack {
			inRack = append(inRack, b.ID)
		}
	}
	candidates := all
	if len(inRack) > 0 {
		candidates = inRack
	}
	return func(topicID [16]byte, partition int32) int32 { return diskless.Pick(topicID, partition, candidates) }
}
