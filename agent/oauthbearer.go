package agent

// OAUTHBEARER on the agent's SASL listeners: the flags, in Kafka's
// sasl.oauthbearer.* spirit, and the JWKS source the agent keeps current
// for as long as it runs (internal/oauthbearer).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/internal/oauthbearer"
)

// OAuthBearerConfig is the agent's OAUTHBEARER settings.
type OAuthBearerConfig struct {
	// JWKSEndpointURL (--sasl-oauthbearer-jwks-endpoint-url) is where the
	// keys that sign tokens are: file:///path or http(s)://; empty turns
	// OAUTHBEARER off.
	JWKSEndpointURL string
	// JWKSRefresh is how often a JWKS URL is fetched again.
	JWKSRefresh time.Duration
	oauthbearer.Config
}

func defaultOAuthBearerConfig() OAuthBearerConfig {
	return OAuthBearerConfig{JWKSRefresh: time.Hour, Config: oauthbearer.DefaultConfig()}
}

func (o *OAuthBearerConfig) registerFlags(fs *pflag.FlagSet, k *kafka.Config) {
	fs.StringVar(&o.JWKSEndpointURL, "sasl-oauthbearer-jwks-endpoint-url", o.JWKSEndpointURL, "JWKS of the keys that sign OAUTHBEARER tokens, file:///path (re-read when it changes) or http(s)://... (fetched every --sasl-oauthbearer-jwks-endpoint-refresh and when a token names an unknown key) (sasl.oauthbearer.jwks.endpoint.url); setting it enables OAUTHBEARER. See docs/security.md.")
	fs.DurationVar(&o.JWKSRefresh, "sasl-oauthbearer-jwks-endpoint-refresh", o.JWKSRefresh, "How often an http(s) JWKS is fetched again (sasl.oauthbearer.jwks.endpoint.refresh.ms); at least 10s.")
	fs.StringVar(&o.ExpectedIssuer, "sasl-oauthbearer-expected-issuer", o.ExpectedIssuer, "The iss claim OAUTHBEARER tokens must carry (sasl.oauthbearer.expected.issuer); empty checks none.")
	fs.StringSliceVar(&o.ExpectedAudience, "sasl-oauthbearer-expected-audience", o.ExpectedAudience, "Audiences, one of which the aud claim of OAUTHBEARER tokens must hold (sasl.oauthbearer.expected.audience); empty checks none.")
	fs.StringVar(&o.SubClaimName, "sasl-oauthbearer-sub-claim-name", o.SubClaimName, "Claim of an OAUTHBEARER token that names its principal, User:<value> (sasl.oauthbearer.sub.claim.name).")
	fs.StringVar(&o.ScopeClaimName, "sasl-oauthbearer-scope-claim-name", o.ScopeClaimName, "Claim of an OAUTHBEARER token that lists its scopes, which are logged (sasl.oauthbearer.scope.claim.name).")
	fs.DurationVar(&o.ClockSkew, "sasl-oauthbearer-clock-skew", o.ClockSkew, "Leeway given to the exp, nbf and iat claims of OAUTHBEARER tokens for clocks that differ (sasl.oauthbearer.clock.skew.seconds).")
	fs.DurationVar(&k.ConnectionsMaxReauth, "connections-max-reauth", k.ConnectionsMaxReauth, "Longest a SASL session lasts before the client must re-authenticate on its connection, which is closed if it does not (connections.max.reauth.ms, KIP-368); 0 sets no limit, though an OAUTHBEARER session still ends when its token expires.")
}

// validateOAuthBearer checks the flags.
func (c Config) validateOAuthBearer() error {
	o := c.OAuthBearer
	listed := slices.Contains(c.Kafka.SASLEnabledMechanisms, kafka.MechanismOAuthBearer)
	if o.JWKSEndpointURL == "" {
		if listed {
			return errors.New("--sasl-enabled-mechanisms: OAUTHBEARER needs --sasl-oauthbearer-jwks-endpoint-url")
		}
		return nil
	}
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	if _, err := oauthbearer.NewSource(oauthbearer.SourceConfig{URL: o.JWKSEndpointURL, RefreshInterval: o.JWKSRefresh}); err != nil {
		return fmt.Errorf("--sasl-oauthbearer-jwks-endpoint-url: %w", err)
	}
	return nil
}

// saslMechanisms is --sasl-enabled-mechanisms with OAUTHBEARER added when
// a JWKS is given.
func (c Config) saslMechanisms() []string {
	m := c.Kafka.SASLEnabledMechanisms
	if c.OAuthBearer.JWKSEndpointURL != "" && !slices.Contains(m, kafka.MechanismOAuthBearer) {
		m = append(slices.Clone(m), kafka.MechanismOAuthBearer)
	}
	return m
}

// loadOAuthBearer makes the validator of OAUTHBEARER tokens and loads its
// keys; nil and nil without --sasl-oauthbearer-jwks-endpoint-url. A JWKS
// file that does not load stops the agent; a URL that does not answer is
// only a warning, since the provider may come up after the agent, and
// tokens are refused until it does.
func (a *Agent) loadOAuthBearer(ctx context.Context) (*oauthbearer.Validator, oauthbearer.Source, error) {
	o := a.cfg.OAuthBearer
	if o.JWKSEndpointURL == "" {
		return nil, nil, nil
	}
	src, err := oauthbearer.NewSource(oauthbearer.SourceConfig{URL: o.JWKSEndpointURL, RefreshInterval: o.JWKSRefresh, Logger: a.logger})
	if err != nil {
		return nil, nil, fmt.Errorf("--sasl-oauthbearer-jwks-endpoint-url: %w", err)
	}
	if err := src.Load(ctx); err != nil {
		if strings.HasPrefix(o.JWKSEndpointURL, "file:") {
			return nil, nil, fmt.Errorf("--sasl-oauthbearer-jwks-endpoint-url %s: %w", o.JWKSEndpointURL, err)
		}
		a.logger.Warn("OAUTHBEARER JWKS not loaded; tokens are refused until it is", "url", o.JWKSEndpointURL, "err", err)
	}
	return oauthbearer.NewValidator(o.Config, src), src, nil
}
