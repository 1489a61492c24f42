package kafka

// SaslAuthenticate (key 36), versions 0-2 (KIP-152).
//
// Carries the mechanism's tokens after SaslHandshake v1: one round for
// PLAIN, two for SCRAM (client-first, client-final). A failure answers
// SASL_AUTHENTICATION_FAILED with Kafka's message for the mechanism and
// closes the connection after the answer; the reason (unknown user, wrong
// password, bad syntax) goes to the agent's log only, as in Kafka, so a
// client cannot probe which users exist. SessionLifetimeMillis (v1+) is
// 0: no re-authentication (sasl.go). Outside the authenticate phase (a
// plaintext listener, or after authentication) the answer is
// ILLEGAL_SASL_STATE.

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
	out, failure := s.saslStep(c, req.SASLAuthBytes, r.remote)
	if failure != "" {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &failure
		return resp, nil
	}
	resp.SASLAuthBytes = out
	return resp, nil
}
