package kafka

// SASL on SASL_PLAINTEXT and SASL_SSL listeners (KIP-152): the per-connection state
// machine that SaslHandshake (saslhandshake.go) and SaslAuthenticate
// (saslauthenticate.go) drive, and the gate serveConn applies before
// dispatch.
//
//	          ApiVersions                SaslHandshake(ok)            SaslAuthenticate (last step ok)
//	handshake ─────────────▶ handshake ──────────────────▶ authenticate ───────────────────────────▶ authenticated
//	    │ anything else: close              │ unknown mechanism: answer, close   │ failure: answer, close
//	    ▼                                   ▼                                    ▼ anything else: close
//
// As in Kafka, before authentication a SASL listener accepts only
// ApiVersions and SaslHandshake, then only SaslAuthenticate; any other
// request closes the connection without an answer, so nothing is read or
// written by a client that has not authenticated. Frames are limited to
// Config.SASLMaxReceiveBytes until then (sasl.server.max.receive.size).
// A failed authentication is answered with SASL_AUTHENTICATION_FAILED and
// the connection closes once the answer is sent.
//
// After SaslHandshake v0 the client sends its tokens as bare frames, a
// size and the token with no request header, and gets the server's tokens
// the same way (readRawToken); a failure there closes the connection with
// no answer, as Kafka does, since the framing has no place for an error.
// librdkafka requires v0 in ApiVersions although it uses v1.
//
// OAUTHBEARER (oauthbearer.go) takes one token, or on a refused one
// answers an error challenge and fails on the client's next token.
// Sessions end, and clients re-authenticate on their connection, as
// KIP-368 has it (reauth.go): a SaslHandshake in the authenticated phase
// of a session with a lifetime goes back to the authenticate phase, and
// a connection whose session ended is closed at its next other request.

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/strata-streaming/strata/internal/scram"
)

// saslStep feeds one client token to the connection's mechanism; version
// is that of the SaslAuthenticate that carried it, -1 for a bare token. It
// returns the server's token, or on failure Kafka's message for the
// mechanism, after which the connection must close (closeAfter is set).
// The cause of a failure is logged, never sent.
func (s *Server) saslStep(ctx context.Context, c *connState, token []byte, version int16, remote string) (out []byte, failure string) {
	fail := func(err error, message string) ([]byte, string) {
		s.logger.Info("SASL authentication failed", "client", remote, "mechanism", c.sasl.mechanism, "reauthentication", c.sasl.reauth, "err", err)
		s.metrics.authenticated(c.sasl.mechanism, false)
		c.closeAfter = true
		return nil, message
	}
	// succeed ends the exchange; expiry is the credential's, zero when it
	// has none.
	succeed := func(user string, expiry time.Time) ([]byte, string) {
		principal := "User:" + user
		if c.sasl.reauth && principal != c.sasl.principal {
			return fail(errPrincipalChanged, fmt.Sprintf("Cannot change principals during re-authentication from %s: %s", c.sasl.principal, principal))
		}
		reauth := c.sasl.reauth
		// A re-authentication leaves the principal as it was (the same):
		// Produces in flight may be reading it.
		c.sasl.phase, c.sasl.scram = saslDone, nil
		if !reauth {
			c.sasl.principal = principal
		}
		s.startSession(c, expiry, version) // a new session: reauth is reset
		if reauth {
			s.metrics.sasl(c.sasl.mechanism, "reauthenticated")
		} else {
			s.metrics.authenticated(c.sasl.mechanism, true)
		}
		s.logger.Debug("SASL authenticated", "client", remote, "mechanism", c.sasl.mechanism, "principal", c.sasl.principal,
			"reauthentication", reauth, "session_lifetime_ms", c.sasl.lifetime.Milliseconds())
		return nil, ""
	}
	if c.sasl.badMechanism != "" {
		return fail(errMechanismChanged, c.sasl.badMechanism)
	}
	switch c.sasl.mechanism {
	case MechanismPlain:
		p, err := scram.ParsePlain(token)
		if err == nil && !s.plainMatches(p.User, p.Password) {
			err = scram.ErrAuthentication
		}
		if err != nil {
			return fail(err, "Authentication failed: Invalid username or password")
		}
		return succeed(p.User, time.Time{})
	case MechanismOAuthBearer:
		tok, challenge, err := s.oauthStep(ctx, c, token)
		switch {
		case challenge != nil:
			s.logger.Info("OAUTHBEARER token refused; answering the error challenge", "client", remote, "err", err)
			return challenge, ""
		case err != nil:
			return fail(err, c.sasl.oauthFailure)
		}
		s.logger.Debug("OAUTHBEARER token accepted", "client", remote, "principal", tok.Principal, "scope", tok.Scope, "expires", tok.Expiry)
		return succeed(tok.Principal, tok.Expiry)
	}
	out, err := c.sasl.scram.Step(token)
	if err != nil {
		return fail(err, "Authentication failed during authentication due to invalid credentials with SASL mechanism "+c.sasl.mechanism)
	}
	if c.sasl.scram.Done() {
		if _, failure := succeed(c.sasl.scram.User(), time.Time{}); failure != "" {
			return nil, failure
		}
	}
	return out, ""
}

// The SASL mechanisms served, by their SASL names.
const (
	MechanismPlain        = "PLAIN"
	MechanismSCRAMSHA256  = "SCRAM-SHA-256"
	MechanismSCRAMSHA512  = "SCRAM-SHA-512"
	MechanismOAuthBearer  = "OAUTHBEARER"
	defaultSASLMaxReceive = 512 << 10 // Kafka's sasl.server.max.receive.size
)

// AllMechanisms lists every mechanism this server can serve.
func AllMechanisms() []string {
	return append(DefaultMechanisms(), MechanismOAuthBearer)
}

// DefaultMechanisms are those enabled unless configured otherwise:
// OAUTHBEARER is added when a JWKS is configured.
func DefaultMechanisms() []string {
	return []string{MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512}
}

type saslPhase int8

const (
	saslHandshake    saslPhase = iota // waiting for SaslHandshake (ApiVersions allowed)
	saslAuthenticate                  // mechanism chosen; only SaslAuthenticate
	saslDone                          // authenticated
)

// saslState is one connection's SASL progress.
type saslState struct {
	phase     saslPhase
	mechanism string
	scram     *scram.Conversation // SCRAM mechanisms only
	// raw: the handshake was v0, so tokens come as bare frames.
	raw bool
	// principal is "User:<name>" once authenticated, Kafka's form, for the
	// authorizer to come; empty on plaintext listeners (Kafka's
	// User:ANONYMOUS).
	principal string
	// oauthFailure is set once an OAUTHBEARER token was refused and the
	// error challenge answered: the client's next token fails with it.
	oauthFailure string
	session      // reauth.go
}

// admits reports whether a request with key may be handled now; false
// closes the connection.
func (c *connState) admits(key int16) bool {
	if !c.listener.Protocol.SASL() {
		return true
	}
	switch c.sasl.phase {
	case saslHandshake:
		return key == 18 || key == 17
	case saslAuthenticate:
		return key == 36 && !c.sasl.raw
	}
	return true
}

// Principal is the connection's authenticated principal, "User:<name>":
// SASL's on a SASL listener, else the mapped subject of a client
// certificate on an SSL listener (tlsprincipal.go), else "User:ANONYMOUS",
// as Kafka names it.
func (c *connState) Principal() string {
	switch {
	case c.sasl.principal != "":
		return c.sasl.principal
	case c.tlsPrincipal != "":
		return c.tlsPrincipal
	}
	return "User:ANONYMOUS"
}

// frameLimit is the largest frame the connection may send next: Kafka's
// sasl.server.max.receive.size until a SASL connection authenticates,
// so that an unauthenticated client cannot make the agent buffer a
// request-sized frame.
func (s *Server) frameLimit(c *connState) int32 {
	if c.listener.Protocol.SASL() && c.sasl.phase != saslDone {
		return min(s.cfg.SASLMaxReceiveBytes, s.cfg.MaxRequestBytes)
	}
	return s.cfg.MaxRequestBytes
}

// mechanismEnabled reports whether name is in the server's enabled list;
// OAUTHBEARER also needs a validator.
func (s *Server) mechanismEnabled(name string) bool {
	if name == MechanismOAuthBearer && s.cfg.OAuthBearer == nil {
		return false
	}
	return slices.Contains(s.cfg.SASLEnabledMechanisms, name)
}

// plainMatches checks a PLAIN password against the user's SCRAM
// credentials (as Redpanda does: no separate PLAIN store), trying each
// mechanism the user has.
func (s *Server) plainMatches(user, password string) bool {
	for _, m := range scram.Mechanisms() {
		if c, ok := s.users.ScramCredential(user, m); ok && c.Matches(password) {
			return true
		}
	}
	return false
}

// readRawToken reads one bare token frame of size bytes after SaslHandshake
// v0 and answers it with a bare frame. ok is false when the connection must
// close: a bad size, a read error, or a failed authentication, which this
// framing cannot report.
func (s *Server) readRawToken(ctx context.Context, br *bufio.Reader, c *connState, size int32, remote string) (a *answer, ok bool) {
	if size < 0 || size > s.frameLimit(c) {
		s.logger.Warn("closing connection: bad SASL token size", "client", remote, "size", size, "max", s.frameLimit(c))
		return nil, false
	}
	token, err := readFrameBody(br, int(size))
	if err != nil {
		return nil, false
	}
	out, failure := s.saslStep(ctx, c, token, -1, remote)
	if failure != "" {
		return nil, false
	}
	done := make(chan struct{})
	close(done)
	return &answer{done: done, bare: append([]byte{}, out...)}, true
}
