package kafka

// SaslAuthenticate (key 36), versions 0-2 (KIP-152).
//
// Carries the mechanism's tokens after SaslHandshake: one round for PLAIN,
// two for SCRAM (client-first, client-final). A failure answers
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

	"github.com/strata-streaming/strata/internal/scram"
)

func handleSaslAuthenticate(ctx context.Context, s *Server, r *request, req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, error) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	c := r.conn
	if c == nil || c.sasl.phase != saslAuthenticate {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = strptr("SaslAuthenticate outside a SASL exchange: authenticate once, after SaslHandshake, on a SASL listener")
		return resp, nil
	}
	fail := func(err error, message string) (*kmsg.SASLAuthenticateResponse, error) {
		s.logger.Info("SASL authentication failed", "client", r.remote, "mechanism", c.sasl.mechanism, "err", err)
		s.metrics.authenticated(c.sasl.mechanism, false)
		c.closeAfter = true
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = &message
		return resp, nil
	}
	succeed := func(user string) {
		c.sasl.phase, c.sasl.principal, c.sasl.scram = saslDone, "User:"+user, nil
		s.metrics.authenticated(c.sasl.mechanism, true)
		s.logger.Debug("SASL authenticated", "client", r.remote, "mechanism", c.sasl.mechanism, "principal", c.sasl.principal)
	}
	if c.sasl.mechanism == MechanismPlain {
		p, err := scram.ParsePlain(req.SASLAuthBytes)
		if err == nil && !s.plainMatches(p.User, p.Password) {
			err = scram.ErrAuthentication
		}
		if err != nil {
			return fail(err, "Authentication failed: Invalid username or password")
		}
		succeed(p.User)
		return resp, nil
	}
	out, err := c.sasl.scram.Step(req.SASLAuthBytes)
	if err != nil {
		return fail(err, "Authentication failed during authentication due to invalid credentials with SASL mechanism "+c.sasl.mechanism)
	}
	resp.SASLAuthBytes = out
	if c.sasl.scram.Done() {
		succeed(c.sasl.scram.User())
	}
	return resp, nil
}
