package httpapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/membership"
)

// TestPeerHTTPAddr: a drain is forwarded, and a console report fetched,
// only at the address the store registered for the agent; an unregistered
// id, or a gossip address elsewhere, is refused before anything is fetched.
func TestPeerHTTPAddr(t *testing.T) {
	reg := metadata.AgentInfo{ID: 2, KafkaAddr: "agent-2.strata:9092", HTTPAddr: "[::]:9644"}
	member := func(httpAddr string) []membership.Member {
		return []membership.Member{{ID: 1, KafkaAddr: "agent-1.strata:9092", HTTPAddr: "[::]:9644"}, {ID: 2, KafkaAddr: "agent-2.strata:9092", HTTPAddr: httpAddr}}
	}
	for _, tc := range []struct {
		name    string
		members []membership.Member
		reg     metadata.AgentInfo
		regErr  error
		addr    string
		status  int
	}{
		{"registered, unspecified host", member("[::]:9644"), reg, nil, "agent-2.strata:9644", 0},
		{"registered, named host", member("agent-2.strata:9644"), reg, nil, "agent-2.strata:9644", 0},
		{"exact registered address", member("10.0.0.2:8080"), metadata.AgentInfo{ID: 2, KafkaAddr: "k:9092", HTTPAddr: "10.0.0.2:8080"}, nil, "10.0.0.2:8080", 0},
		{"unregistered", member("[::]:9644"), metadata.AgentInfo{}, metadata.ErrUnknownAgent, "", http.StatusNotFound},
		{"store unreadable", member("[::]:9644"), metadata.AgentInfo{}, errors.New("503"), "", http.StatusBadGateway},
		{"not in gossip", member("")[:1], reg, nil, "", http.StatusNotFound},
		{"elsewhere", member("169.254.169.254:80"), reg, nil, "", http.StatusForbidden},
		{"other port on its host", member("agent-2.strata:22"), reg, nil, "", http.StatusForbidden},
		{"unspecified host, other Kafka host", []membership.Member{{ID: 2, KafkaAddr: "evil.example:9092", HTTPAddr: "[::]:9644"}}, reg, nil, "", http.StatusForbidden},
	} {
		addr, status, err := peerHTTPAddr(2, tc.members, tc.reg, tc.regErr)
		if addr != tc.addr || status != tc.status || (err == nil) != (tc.status == 0) {
			t.Errorf("%s: got %q %d %v, want %q %d", tc.name, addr, status, err, tc.addr, tc.status)
		}
	}
}
