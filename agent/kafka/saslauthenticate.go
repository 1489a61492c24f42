package kafka

// SaslAuthenticate (key 36), versions 0-2 (KIP-152).
//
// Carries the mechanism's tokens after SaslHandshake v1: one round for
// PLAIN and OAUTHBEARER (two when a refused token's error challenge is
// answered, oauthbearer.go), two for SCRAM (client-first, client-final).
// A failure answers
// SASL_AUTHENTICATION_FAILED with Kafka's message for the mechanism and
// closes the connection after the answer; the reason (unknown user, wrong
// password, bad syntax) goes to the agent's log only, as in Kafka, so a
// client cannot probe which users exist. SessionLifetimeMillis (v1+) is
// the session's lifetime after the last step, 0 when it has none; the
// client re-authenticates before it ends (KIP-368, reauth.go). Outside the
// authenticate phase (a plaintext listener, or after authentication) the
// answer is ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleSaslAuthenticate(ctx context.Context, s *Server, r *request, req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := r.conn
	if c == nil || c.sasl.phase != saslAuthenticate || c.sasl.raw {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = strptr("SaslAuthenticate outside a SASL exchange: authenticate once, after SaslHandshake v1, on a SASL listener")
		return resp, nil
	}
	out, failure := s.saslStep(ctx, c, req.SASLAuthBytes, r.version, r.remote)
	if failure != "" {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &failure
		return resp, nil
	}
	resp.SASLAuthBytes = out
	if c.sasl.phase == saslDone {
		resp.SessionLifetimeMillis = c.sasl.lifetime.Milliseconds()
	}
	return resp, nil
}
