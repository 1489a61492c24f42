package httpapi

// The HTTP addresses of other agents that this agent calls: a drain
// forwarded with ?agent= (drain.go) and the console's fetch of each
// agent's report (console.go). Both go through peerHTTP, and are sent with
// s.peerClient in s.scheme (tls.go).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/membership"
)

// peerHTTP returns the HTTP address at which this agent may call agent id,
// from the gossip members and the store's registration of id (one GET of
// agents/<id>.json); see peerHTTPAddr.
func (s *Server) peerHTTP(ctx context.Context, id int32, members []membership.Member) (addr string, status int, err error) {
	reg, regErr := s.deps.Store.Agent(ctx, id)
	return peerHTTPAddr(id, members, reg, regErr)
}

// peerHTTPAddr decides where a request for agent id goes: the HTTP address
// gossip advertises for it (dialable: an unspecified host is replaced by
// the Kafka host), but only when the store vouches for it. Gossip without
// --gossip-key-file is unauthenticated, so anyone who can reach the gossip
// port could otherwise advertise an agent whose HTTP address is any URL on
// the operator's network and have this agent send requests to it. The
// rule: id must be
// registered in the store (reg, regErr from metadata.Store.Agent), and the
// address must be the one registered, or have the registered Kafka host and
// the registered HTTP port. Anything else is refused, with the HTTP status
// a handler should answer, and must not be fetched.
func peerHTTPAddr(id int32, members []membership.Member, reg metadata.AgentInfo, regErr error) (addr string, status int, err error) {
	switch {
	case errors.Is(regErr, metadata.ErrUnknownAgent):
		return "", http.StatusNotFound, fmt.Errorf("agent %d is not registered in the store", id)
	case regErr != nil:
		return "", http.StatusBadGateway, fmt.Errorf("agent %d: %w", id, regErr)
	}
	for _, m := range members {
		if m.ID == id && m.HTTPAddr != "" {
			addr = dialableHTTP(m.HTTPAddr, m.KafkaAddr)
		}
	}
	if addr == "" {
		return "", http.StatusNotFound, fmt.Errorf("agent %d is not a live member of the cluster", id)
	}
	if addr == dialableHTTP(reg.HTTPAddr, reg.KafkaAddr) {
		return addr, 0, nil
	}
	host, port, err1 := net.SplitHostPort(addr)
	regKafkaHost, _, err2 := net.SplitHostPort(reg.KafkaAddr)
	_, regPort, err3 := net.SplitHostPort(reg.HTTPAddr)
	if err1 == nil && err2 == nil && err3 == nil && host == regKafkaHost && port == regPort {
		return addr, 0, nil
	}
	return "", http.StatusForbidden, fmt.Errorf("agent %d advertises HTTP address %s, which is not the one registered in the store (HTTP %s, Kafka %s)", id, addr, reg.HTTPAddr, reg.KafkaAddr)
}
