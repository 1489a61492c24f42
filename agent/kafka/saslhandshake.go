package kafka

// SaslHandshake (key 17), versions 0-1.
//
// Picks the connection's mechanism among --sasl-enabled-mechanisms (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER). An unknown or disabled mechanism gets
// UNSUPPORTED_SASL_MECHANISM with the enabled list and the connection
// closes after the answer, as Kafka's authenticator does. On a listener
// without SASL the answer is ILLEGAL_SASL_STATE, and after authentication
// too unless the session has a lifetime and the handshake begins a
// re-authentication (reauth.go).
// After version 0 the tokens come as bare frames, not SaslAuthenticate
// requests (sasl.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/scram"
)

func handleSaslHandshake(ctx context.Context, s *Server, r *request, req *kmsg.SASLHandshakeRequest) (*kmsg.SASLHandshakeResponse, error) {
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = append([]string(nil), s.cfg.SASLEnabledMechanisms...)
	c := r.conn
	if c != nil && c.listener.Protocol.SASL() && c.sasl.phase == saslDone {
		s.beginReauth(c, r.version, req, resp)
		return resp, nil
	}
	if c == nil || !c.listener.Protocol.SASL() || c.sasl.phase != saslHandshake {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	if !s.mechanismEnabled(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.closeAfter = true
		return resp, nil
	}
	c.sasl.phase, c.sasl.raw = saslAuthenticate, r.version == 0
	s.startMechanism(c, req.Mechanism)
	return resp, nil
}

// startMechanism readies the connection for mechanism's first token.
func (s *Server) startMechanism(c *connState, mechanism string) {
	c.sasl.mechanism, c.sasl.scram, c.sasl.oauthFailure = mechanism, nil, ""
	if m, err := scram.ByName(mechanism); err == nil {
		c.sasl.scram = scram.NewConversation(m, func(user string) (scram.Credential, bool) {
			return s.users.ScramCredential(user, m)
		})
	}
}
