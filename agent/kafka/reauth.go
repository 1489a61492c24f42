package kafka

// SASL sessions and re-authentication (KIP-368), as Kafka's
// SaslServerAuthenticator has them.
//
// A session has a lifetime when --connections-max-reauth-ms is set, or
// when its credential expires (an OAUTHBEARER token): the shorter of the
// two. SaslAuthenticate v1+ tells the client the lifetime
// (session_lifetime_ms), and before it ends the client sends SaslHandshake
// and SaslAuthenticate again on the same connection, with the same
// mechanism and as the same principal; the new session's lifetime starts
// then. A connection whose session ended is closed when its next request
// other than that SaslHandshake arrives, with no answer, as Kafka does;
// this includes clients that authenticated with SaslAuthenticate v0 or
// bare tokens, which cannot re-authenticate and were told nothing.
// Without a lifetime (PLAIN and SCRAM with the flag at 0, the default)
// sessions last as long as their connections, and a handshake after
// authentication gets ILLEGAL_SASL_STATE.

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	errPrincipalChanged = errors.New("kafka: re-authentication as another principal")
	errMechanismChanged = errors.New("kafka: re-authentication with another mechanism")
)

// session is the part of a connection's SASL state that outlives one
// authentication.
type session struct {
	// expiry is when the session ends; zero when it never does.
	expiry time.Time
	// lifetime is what SaslAuthenticate answered as session_lifetime_ms.
	lifetime time.Duration
	// canReauth: the client authenticated with SaslAuthenticate v1+, so
	// it knows the lifetime and may re-authenticate.
	canReauth bool
	// reauth is set from the SaslHandshake that begins a re-authentication
	// until it succeeds.
	reauth bool
	// badMechanism is Kafka's message for a re-authentication that named
	// another mechanism; its SaslAuthenticate fails with it.
	badMechanism string
}

// startSession sets the lifetime of the session an authentication opens;
// credExpiry is zero for a credential that does not expire.
func (s *Server) startSession(c *connState, credExpiry time.Time, version int16) {
	now := time.Now()
	var lifetime time.Duration
	limited := false
	if limit := s.cfg.ConnectionsMaxReauth; limit > 0 {
		lifetime, limited = limit, true
	}
	if !credExpiry.IsZero() {
		if remaining := max(credExpiry.Sub(now), 0); !limited || remaining < lifetime {
			lifetime = remaining
		}
		limited = true
	}
	if !limited {
		c.sasl.session = session{}
		return
	}
	c.sasl.session = session{expiry: now.Add(lifetime), lifetime: lifetime, canReauth: version >= 1}
}

// beginReauth answers a SaslHandshake on an authenticated connection: it
// starts a re-authentication when the session allows one, else answers
// ILLEGAL_SASL_STATE as before.
func (s *Server) beginReauth(c *connState, version int16, req *kmsg.SASLHandshakeRequest, resp *kmsg.SASLHandshakeResponse) {
	if !c.sasl.canReauth || version < 1 {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return
	}
	if !s.mechanismEnabled(req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.closeAfter = true
		return
	}
	c.sasl.phase, c.sasl.reauth, c.sasl.oauthFailure = saslAuthenticate, true, ""
	if req.Mechanism != c.sasl.mechanism {
		// Kafka accepts the handshake and fails the SaslAuthenticate.
		c.sasl.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'",
			req.Mechanism, c.sasl.mechanism)
		return
	}
	s.startMechanism(c, req.Mechanism)
}

// sessionExpired reports whether the connection must close before
// handling a request with key because its session ended; it logs and
// counts the closing.
func (s *Server) sessionExpired(c *connState, key int16, remote string) bool {
	switch {
	case c.sasl.expiry.IsZero() || c.sasl.phase != saslDone:
		return false
	case key == 17 && c.sasl.canReauth:
		return false // the re-authentication that renews it
	case time.Now().Before(c.sasl.expiry):
		return false
	}
	s.metrics.sasl(c.sasl.mechanism, "expired")
	s.logger.Info("closing connection: SASL session expired without re-authentication", "client", remote,
		"principal", c.sasl.principal, "mechanism", c.sasl.mechanism, "api_key", key, "expired_at", c.sasl.expiry)
	return true
}
