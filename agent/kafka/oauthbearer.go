package kafka

// The OAUTHBEARER mechanism (RFC 7628, KIP-255) on SASL listeners, as
// Kafka's OAuthBearerSaslServer serves it: one client token carrying a
// JWT, validated against the JWKS of --sasl-oauthbearer-jwks-endpoint-url
// (internal/oauthbearer). A token refused by validation is answered with
// the JSON error challenge ({"status":"invalid_token"}) and no error; the
// client acknowledges it with a lone 0x01 and the authentication then
// fails with SASL_AUTHENTICATION_FAILED, whose message is the challenge,
// and the connection closes. A malformed message, or an authorization id
// that is not the token's principal, fails at once. Extensions are
// accepted and ignored, as Kafka's default validator does.

import (
	"context"
	"errors"

	"github.com/strata-streaming/strata/internal/oauthbearer"
)

var errAuthzID = errors.New("kafka: OAUTHBEARER authorization id differs from the token's principal")

// oauthStep validates the client's token. On a refused token it returns
// the challenge to answer and sets c.sasl.oauthFailure, the message the
// next step fails with (the challenge itself, as in Kafka); on any other
// failure err, with c.sasl.oauthFailure the message for the client.
func (s *Server) oauthStep(ctx context.Context, c *connState, token []byte) (tok oauthbearer.Token, challenge []byte, err error) {
	if c.sasl.oauthFailure != "" {
		// The client's answer to the challenge, normally a lone 0x01:
		// whatever it is, the token was refused.
		return tok, nil, errors.New("kafka: OAUTHBEARER token refused earlier in the exchange")
	}
	resp, err := oauthbearer.ParseClientResponse(token)
	if err != nil {
		c.sasl.oauthFailure = "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
		return tok, nil, err
	}
	// mechanismEnabled let the handshake through only with a validator.
	tok, err = s.cfg.OAuthBearer.Validate(ctx, resp.Token)
	if err != nil {
		challenge = oauthbearer.ErrorChallenge("invalid_token", "")
		c.sasl.oauthFailure = string(challenge)
		return tok, challenge, err
	}
	if resp.AuthzID != "" && resp.AuthzID != tok.Principal {
		c.sasl.oauthFailure = "Authentication failed: Client requested an authorization id that is different from the token's principal name"
		return tok, nil, errAuthzID
	}
	return tok, nil, nil
}
